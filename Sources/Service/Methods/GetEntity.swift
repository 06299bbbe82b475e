import JSON
import JSONRPC
import NetworkModels

/// `getEntity`: an entity's state with its details, at the front of the preload queue
/// (docs/protocol.md "Preload").
enum GetEntity: ServiceMethod {
  static let name = "getEntity"
  static let errorCodes = ErrorCode.everyMethod + ErrorCode.entityFailures
  typealias Result = EntityState

  struct Params: MethodParams {
    static let fields: [ParamField] = EntityKey.fields + [.optional("refresh", .boolean)]
    let key: EntityKey
    let refresh: Bool

    /// Made whole at the end (see `GetFollowState.Params`).
    init(from params: borrowing ParamsReader) throws(ResponseError) {
      let key = try params.entityKey()
      self.init(key: key, refresh: try params.bool(ParamKey.refresh) ?? false)
    }

    private init(key: EntityKey, refresh: Bool) {
      self.key = key
      self.refresh = refresh
    }
  }

  static func handle(_ request: Request<GetEntity>, by service: NetmodelService) throws(ResponseError) {
    let params = request.params
    let reply = request.reply
    try admitted { () throws(AdmissionProblem) in
      try service.models.entity(params.key, refresh: params.refresh) { result in
        switch result {
        case .success(let state): reply.succeed(state)
        case .failure(let failure): reply.fail(failure.failure.responseError(state: failure.state))
        }
      }
    }
  }
}
