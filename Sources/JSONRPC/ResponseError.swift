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
  /// A tree made from its text when the error was made with `dataText` (tests and logs
  /// read it; replies write the text). The common errors whose data is one or a few
  /// members (`invalidParams`' path, a parse error's place) keep it as text: building a
  /// jansson object and dumping it took several allocations per error.
  public var data: JSON? {
    get {
      switch dataValue {
      case .tree(let tree): return tree
      case .text(let text): return try? JSON.parse(text)
      case nil: return nil
      }
    }
    set { dataValue = newValue.map(DataValue.tree) }
  }
  /// One optional member for both forms: an error is copied a few times a request, and
  /// each stored member costs its copy and its destroy.
  private var dataValue: DataValue?
  private enum DataValue {
    case tree(JSON)
    case text([UInt8])
  }
  /// The message is `prefix` then `text`, kept apart so a common error (an unknown
  /// method) is written without making its message: building the `String` cost more
  /// than the rest of the answer.
  private var prefix: StaticString?
  private var text: String

  public init(_ code: ErrorCode, _ message: String, data: JSON? = nil) {
    self.code = code
    self.text = message
    self.dataValue = data.map(DataValue.tree)
  }

  /// `dataText` must be one JSON value (the caller writes it).
  public init(_ code: ErrorCode, _ message: String, dataText: [UInt8]) {
    self.code = code
    self.text = message
    self.dataValue = .text(dataText)
  }

  private init(_ code: ErrorCode, _ prefix: StaticString, _ text: String) {
    self.code = code
    self.prefix = prefix
    self.text = text
  }

  /// `-32602` with `data.path`, a JSON Pointer to the offending field of `params`.
  public static func invalidParams(_ message: String, path: String) -> ResponseError {
    var text: [UInt8] = []
    appendLiteral(#"{"path":"#, to: &text)
    appendJSONString(path, to: &text)
    text.append(UInt8(ascii: "}"))
    return ResponseError(.invalidParams, message, dataText: text)
  }

  /// `-32700` for what does not parse, with where (`data.line`, `column`, `position`).
  public static func parseError(_ error: JSONError) -> ResponseError {
    var text: [UInt8] = []
    appendDecimal(Int64(error.line), between: #"{"line":"#, and: #","column":"#, to: &text)
    appendDecimal(Int64(error.column), between: "", and: #","position":"#, to: &text)
    appendDecimal(Int64(error.position), between: "", and: "}", to: &text)
    var parseError = ResponseError(.parseError, error.message, dataText: text)
    parseError.prefix = "parse error: "
    return parseError
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

  /// The same text on the stack, for an error without `data` or with its text (else
  /// the text fails).
  func encode(into text: inout StackText) {
    if case .tree = dataValue { return text.giveUp() }
    text.put(#"{"code":"#)
    text.putDecimal(code.rawValue)
    text.put(#","message":""#)
    // A prefix is one of this file's literals, which need no escapes: put as it is.
    if let prefix { text.put(prefix) }
    text.putStringContent(self.text)
    text.put(UInt8(ascii: "\""))
    if case .text(let dataText) = dataValue {
      text.put(#","data":"#)
      dataText.withUnsafeBufferPointer { text.put($0) }
    }
    text.put(UInt8(ascii: "}"))
  }

  public func encode(into buffer: inout [UInt8]) {
    appendDecimal(code.rawValue, between: #"{"code":"#, and: #","message":"#, to: &buffer)
    if let prefix {
      appendJSONString(text, after: prefix, to: &buffer)
    } else {
      appendJSONString(text, to: &buffer)
    }
    switch dataValue {
    case .text(let dataText):
      appendLiteral(#","data":"#, to: &buffer)
      buffer.append(contentsOf: dataText)
    case .tree(let dataTree):
      appendLiteral(#","data":"#, to: &buffer)
      dataTree.encode(into: &buffer)
    case nil: break
    }
    buffer.append(UInt8(ascii: "}"))
  }
}
