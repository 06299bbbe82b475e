import JSON
import JSONRPC

/// The application's error codes, as schema/openrpc.json's `components.errors` names them.
extension ErrorCode {
  public static let backendUnavailable = ErrorCode(rawValue: -32001)
  public static let backendRejected = ErrorCode(rawValue: -32002)
  public static let unauthorized = ErrorCode(rawValue: -32003)
  public static let unknownKindOrList = ErrorCode(rawValue: -32004)
  public static let shuttingDown = ErrorCode(rawValue: -32005)

  /// What any method of the service may answer: bad params, a request after `shutdown`,
  /// a fault of the server's own.
  static let everyMethod: [ErrorCode] = [.invalidParams, .shuttingDown, .internalError]
  /// What a method that reads or changes an entity may answer besides: the backend's
  /// failures, and -32800 when its caller cancels it while it waits.
  static let entityFailures: [ErrorCode] = [
    .backendUnavailable, .backendRejected, .unauthorized, .unknownKindOrList, .requestCancelled,
  ]
}

extension ResponseError {
  /// The answer to every request after `shutdown`, and to those still pending when the
  /// server stops.
  public static var shuttingDown: ResponseError {
    ResponseError(.shuttingDown, "server shutting down", data: JSON.object().set("retryable", .bool(false)))
  }
}
