import JSON

/// The `error` member of a response.
public struct ResponseError: Error {
  public var code: ErrorCode
  public var message: String {
    get { prefix.map { "\($0)\(text)" } ?? text }
    set {
      prefix = nil
      text = newValue
    }
  }
  public var data: JSON?
  /// The message is `prefix` then `text`, kept apart so a common error (an unknown
  /// method) is written without making its message: building the `String` cost more
  /// than the rest of the answer.
  private var prefix: StaticString?
  private var text: String

  public init(_ code: ErrorCode, _ message: String, data: JSON? = nil) {
    self.code = code
    self.text = message
    self.data = data
  }

  private init(_ code: ErrorCode, _ prefix: StaticString, _ text: String) {
    self.code = code
    self.prefix = prefix
    self.text = text
  }

  /// `-32602` with `data.path`, a JSON Pointer to the offending field of `params`.
  public static func invalidParams(_ message: String, path: String) -> ResponseError {
    ResponseError(.invalidParams, message, data: JSON.object().set("path", .string(path)))
  }

  public static func methodNotFound(_ method: String) -> ResponseError {
    ResponseError(.methodNotFound, "method not found: ", method)
  }

  public static func invalidRequest(_ message: String) -> ResponseError {
    ResponseError(.invalidRequest, message)
  }

  public static func internalError(_ message: String) -> ResponseError {
    ResponseError(.internalError, message)
  }

  /// The same text on the stack, for an error without `data` (else the text fails).
  func encode(into text: inout StackText) {
    guard data == nil else { return text.giveUp() }
    text.put(#"{"code":"#)
    text.putDecimal(code.rawValue)
    text.put(#","message":""#)
    if let prefix { prefix.withUTF8Buffer { text.putStringContent($0) } }
    text.putStringContent(self.text)
    text.put(#""}"#)
  }

  public func encode(into buffer: inout [UInt8]) {
    appendDecimal(code.rawValue, between: #"{"code":"#, and: #","message":"#, to: &buffer)
    if let prefix {
      appendJSONString(text, after: prefix, to: &buffer)
    } else {
      appendJSONString(text, to: &buffer)
    }
    if let data {
      appendLiteral(#","data":"#, to: &buffer)
      data.encode(into: &buffer)
    }
    buffer.append(UInt8(ascii: "}"))
  }
}
