import JSONRPC
import NetworkModels

/// `unfollow`: `setFollowState` with `following: false` (docs/protocol.md "Mutations").
enum Unfollow: ServiceMethod {
  static let name = "unfollow"
  static let errorCodes = Follow.errorCodes
  typealias Params = Follow.Params
  typealias Result = EntityState

  static func handle(_ request: Request<Unfollow>, by service: NetmodelService) throws(ResponseError) {
    let params = request.params
    try service.mutate(
      params.key, to: false, await: params.await, client: request.connection.clientName,
      request.reply.responder)
  }
}
