import JSON
import JSONRPC

/// `shutdown` (LSP's): every request after it is refused with -32005; `exit` then ends
/// the process with 0.
enum Shutdown: ServiceMethod {
  static let name = "shutdown"
  static let errorCodes = ErrorCode.everyMethod
  typealias Params = NoParams

  /// `null`, as LSP's `shutdown` answers.
  struct Result: EncodableResult {
    func encode(into buffer: inout [UInt8]) { appendLiteral("null", to: &buffer) }
  }

  static func handle(_ request: Request<Shutdown>, by service: NetmodelService) throws(ResponseError) {
    service.shutdownRequested = true
    service.server.dispatcher.refusal = .shuttingDown
    request.reply.succeed(Result())
  }
}
