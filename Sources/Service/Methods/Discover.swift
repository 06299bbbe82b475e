import JSON
import JSONRPC

/// `rpc.discover`: the OpenRPC document, schema/openrpc.json as embedded at build time.
enum Discover: ServiceMethod {
  static let name = "rpc.discover"
  static let errorCodes = ErrorCode.everyMethod
  typealias Params = NoParams
  typealias Result = JSON

  static func handle(_ request: Request<Discover>, by service: NetmodelService) throws(ResponseError) {
    request.reply.succeed(service.discoverDocument)
  }
}
