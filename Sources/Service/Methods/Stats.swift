import JSON
import JSONRPC

/// `stats`: the counters (`NetmodelService.statsResult`).
enum Stats: ServiceMethod {
  static let name = "stats"
  static let errorCodes = ErrorCode.everyMethod
  typealias Params = NoParams
  typealias Result = StatsFigures

  static func handle(_ request: Request<Stats>, by service: NetmodelService) throws(ResponseError) {
    request.reply.succeed(service.statsResult())
  }
}
