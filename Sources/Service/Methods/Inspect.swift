import JSON
import JSONRPC
import NetworkModels

/// `inspect`: the items behind `stats`' counters (docs/protocol.md, "What the counters count").
enum Inspect: ServiceMethod {
  static let name = "inspect"
  static let errorCodes = ErrorCode.everyMethod
  typealias Result = InspectReport

  enum Section: String, CaseIterable {
    case connections, entities, outbox, lists, holds
  }

  /// Items per section when `limit` is not given, and the most a request may ask for:
  /// the reply stays small however many entities the server holds.
  static let defaultLimit = 50
  static let maxLimit = 1000

  struct Params: MethodParams {
    static let fields: [ParamField] = [
      .optional("sections", .array), .optional("kind", .string), .optional("id", .string),
      .optional("limit", .integer),
    ]
    let sections: [Section]
    let kind: String?
    let id: String?
    let limit: Int

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      var sections: [Section] = []
      if let list = try params.value("sections") {
        guard list.isArray else { throw .invalidParams("sections must be an array", path: "/sections") }
        for (index, element) in list.elements.enumerated() {
          guard let name = element.string,
            let section = Section.allCases.first(where: { name.hasSameBytes(as: $0.rawValue) })
          else {
            throw .invalidParams(
              "sections/\(index) must be one of \(Section.allCases.map(\.rawValue).joined(separator: ", "))",
              path: "/sections/\(index)")
          }
          if !sections.contains(section) { sections.append(section) }
        }
      }
      self.sections = sections.isEmpty ? Section.allCases : Section.allCases.filter { sections.contains($0) }
      kind = try params.string("kind")
      id = try params.string("id")
      if id != nil && kind == nil { throw .invalidParams("id needs kind", path: "/id") }
      let limit = try params.integer("limit") ?? Int64(Inspect.defaultLimit)
      guard (1...Int64(Inspect.maxLimit)).contains(limit) else {
        throw .invalidParams("limit must be between 1 and \(Inspect.maxLimit)", path: "/limit")
      }
      self.limit = Int(limit)
    }
  }

  static func handle(_ request: Request<Inspect>, by service: NetmodelService) throws(ResponseError) {
    request.reply.succeed(service.inspectReport(request.params))
  }
}
