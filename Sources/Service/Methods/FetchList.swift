import JSONRPC
import NetworkModels

/// `fetchList`: a page of a list, joined with the entity store (docs/protocol.md "Lists").
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

  static func handle(_ request: Request<FetchList>, by service: NetmodelService) throws(ResponseError) {
    let (key, values) = request.params.list
    let reply = request.reply
    try admitted { () throws(AdmissionProblem) in
      try service.models.fetchList(key, params: values, page: request.params.page) { reply.succeed($0) }
    }
  }
}
