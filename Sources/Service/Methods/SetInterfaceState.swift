import JSON
import JSONRPC
import NetworkModels

/// `setInterfaceState`: what a screen shows or may show next, so its details are
/// preloaded in that order (docs/protocol.md "Preload").
enum SetInterfaceState: ServiceMethod {
  static let name = "setInterfaceState"
  static let errorCodes = ErrorCode.everyMethod + [.unknownKindOrList, .requestCancelled]

  struct Params: MethodParams {
    static let fields: [ParamField] = [.required("items", .array), .required("state", .string)]
    let level: Preloader.Level
    /// Read into keys by the handler: their kinds are checked against the backend.
    let items: JSON

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      guard let name = try params.string("state") else { throw .invalidParams("state is required", path: "/state") }
      guard let level = Preloader.Level(name: name) else {
        throw .invalidParams("state must be none, preload, display or visible", path: "/state")
      }
      guard let items = try params.value("items"), items.isArray else {
        throw .invalidParams("items must be an array of {kind, id}", path: "/items")
      }
      self.level = level
      self.items = items
    }
  }

  /// How many items the preloader took.
  struct Result: EncodableResult {
    let accepted: Int

    func encode(into buffer: inout [UInt8]) {
      appendLiteral(#"{"accepted":"#, to: &buffer)
      appendDecimal(Int64(accepted), to: &buffer)
      buffer.append(UInt8(ascii: "}"))
    }
  }

  /// Every item is read before the models admit any: a refusal names the first item
  /// that breaks, whether its form (here) or its kind (the models) is wrong.
  static func handle(_ request: Request<SetInterfaceState>, by service: NetmodelService) throws(ResponseError) {
    let items = request.params.items
    var keys: [EntityKey] = []
    keys.reserveCapacity(items.count)
    var malformed: ResponseError?
    for (index, item) in items.elements.enumerated() {
      let path = "/items/\(index)"
      do throws(ResponseError) {
        guard item.isObject else { throw .invalidParams("an item must be {kind, id}", path: path) }
        keys.append(try ParamsReader(item, path: path).entityKey(prefix: path))
      } catch {
        malformed = error
        break
      }
    }
    if let malformed {
      try admitted(each: "/items") { () throws(IndexedAdmissionProblem) in try service.models.admit(keys) }
      throw malformed
    }
    try admitted(each: "/items") { () throws(IndexedAdmissionProblem) in
      try service.models.setInterfaceState(keys, to: request.params.level, host: request.connection.id)
    }
    request.reply.succeed(Result(accepted: keys.count))
  }
}
