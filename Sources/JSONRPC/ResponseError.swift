import JSON

/// The `error` member of a response.
public struct ResponseError: Error {
  public var code: ErrorCode
  public var message: String
  public var data: JSON?

  public init(_ code: ErrorCode, _ message: String, data: JSON? = nil) {
    self.code = code
    self.message = message
    self.data = data
  }

  /// `-32602` with `data.path`, a JSON Pointer to the offending field of `params`.
  public static func invalidParams(_ message: String, path: String) -> ResponseError {
    ResponseError(.invalidParams, message, data: JSON.object().set("path", .string(path)))
  }

  public static func methodNotFound(_ method: String) -> ResponseError {
    ResponseError(.methodNotFound, "method not found: \(method)")
  }

  public static func invalidRequest(_ message: String) -> ResponseError {
    ResponseError(.invalidRequest, message)
  }

  public static func internalError(_ message: String) -> ResponseError {
    ResponseError(.internalError, message)
  }

  public func encode(into buffer: inout [UInt8]) {
    buffer.append(contentsOf: ResponseError.codePrefix)
    appendDecimal(code.rawValue, to: &buffer)
    buffer.append(contentsOf: ResponseError.messagePrefix)
    appendJSONString(message, to: &buffer)
    if let data {
      buffer.append(contentsOf: ResponseError.dataPrefix)
      data.encode(into: &buffer)
    }
    buffer.append(UInt8(ascii: "}"))
  }

  private static let codePrefix = Array(#"{"code":"#.utf8)
  private static let messagePrefix = Array(#","message":"#.utf8)
  private static let dataPrefix = Array(#","data":"#.utf8)
}
