import JSON
import JSONRPC
import NetworkModels

/// `setFollowState`: the wanted `following` of an entity (docs/protocol.md "Mutations").
enum SetFollowState: ServiceMethod {
  static let name = "setFollowState"
  static let errorCodes = Follow.errorCodes
  typealias Result = EntityState

  struct Params: MethodParams {
    static let fields: [ParamField] =
      EntityKey.fields + [.required("following", .boolean), .optional("await", .boolean)]
    let key: EntityKey
    let following: Bool
    let await: Bool

    /// Made whole at the end (see `GetFollowState.Params`).
    init(from params: borrowing ParamsReader) throws(ResponseError) {
      let key = try params.entityKey()
      guard let following = try params.bool(ParamKey.following) else {
        throw .invalidParams("following is required", path: "/following")
      }
      self.init(key: key, following: following, await: try params.bool(ParamKey.await) ?? false)
    }

    private init(key: EntityKey, following: Bool, `await`: Bool) {
      self.key = key
      self.following = following
      self.await = `await`
    }
  }

  static func handle(_ request: Request<SetFollowState>, by service: NetmodelService) throws(ResponseError) {
    let params = request.params
    try service.mutate(
      params.key, to: params.following, await: params.await, client: request.connection.clientName,
      request.reply.responder)
  }
}
