import JSON
import JSONRPC
import NetworkModels

/// `follow`: `setFollowState` with `following: true` (docs/protocol.md "Mutations").
enum Follow: ServiceMethod {
  static let name = "follow"
  static let errorCodes = ErrorCode.everyMethod + ErrorCode.entityFailures
  typealias Result = EntityState

  struct Params: MethodParams {
    static let fields: [ParamField] = EntityKey.fields + [.optional("await", .boolean)]
    let key: EntityKey
    /// Answer once the backend settled the intent, not at once.
    let await: Bool

    /// Made whole at the end (see `GetFollowState.Params`).
    init(from params: borrowing ParamsReader) throws(ResponseError) {
      let key = try params.entityKey()
      self.init(key: key, await: try params.bool(ParamKey.await) ?? false)
    }

    private init(key: EntityKey, `await`: Bool) {
      self.key = key
      self.await = `await`
    }
  }

  static func handle(_ request: Request<Follow>, by service: NetmodelService) throws(ResponseError) {
    let params = request.params
    try service.mutate(
      params.key, to: true, await: params.await, client: request.connection.clientName,
      request.reply.responder)
  }
}
