import JSONRPC
import NetworkModels

/// `fetchList`: a page of a list, joined with the entity store (README "Lists").
enum FetchList: ServiceMethod {
  static let name = "fetchList"
  static let errorCodes = ErrorCode.everyMethod + [.unknownKindOrList, .requestCancelled]
  typealias Result = ListState

  struct Params: MethodParams {
    static let fields: [ParamField] = [
      .required("list", .string), .optional("params", .object), .optional("page", .string),
    ]
    /// The list's identity and its template values, not yet checked against the backend.
    let list: (ListKey, [String: String])
    let page: PageRequest

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      list = try NetmodelService.listKey(params, path: "")
      switch try params.string("page") {
      case nil: page = .first
      case let text?:
        guard let chosen = PageRequest(rawValue: text) else {
          throw .invalidParams("page must be first, next or refresh", path: "/page")
        }
        page = chosen
      }
    }
  }

  /// A ListState as the service encodes it (`NetmodelService.encode(_:into:)`).
  struct ListState: EncodableResult {
    unowned let service: NetmodelService
    let snapshot: ListStore.Snapshot

    func encode(into buffer: inout [UInt8]) { service.encode(snapshot, into: &buffer) }
  }

  static func handle(_ request: Request<FetchList>, by service: NetmodelService) throws(ResponseError) {
    let (key, values) = try service.checked(request.params.list, path: "")
    let reply = request.reply
    let known = service.lists.fetch(key, params: values, page: request.params.page) { [unowned service] snapshot in
      reply.succeed(ListState(service: service, snapshot: snapshot))
    }
    if !known { throw NetmodelService.unknownList(key.name) }
  }
}
