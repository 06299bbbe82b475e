import JSON

/// A request method: its name, the params it decodes, the result it answers with and
/// every error code it can answer, registered by type (`Dispatcher.register`).
public protocol RequestMethod {
  associatedtype Params: MethodParams
  associatedtype Result: EncodableResult
  static var name: String { get }
  /// Every code it can answer with, JSON-RPC's own included: the contract's `errors`.
  static var errorCodes: [ErrorCode] { get }
}

/// A method the peer sends without an id and that is never answered.
public protocol NotificationMethod {
  associatedtype Params: MethodParams
  static var name: String { get }
}

/// A method's params, decoded once from what the peer sent.
public protocol MethodParams {
  /// The params as the contract lists them; checked against it by the tests.
  static var fields: [ParamField] { get }
  /// Borrowing: an initialiser takes its arguments owned, and the dispatcher's reader
  /// was copied (and the copy destroyed) for every request.
  init(from params: borrowing ParamsReader) throws(ResponseError)
}

/// One by-name param of a method.
public struct ParamField: Sendable, Equatable {
  public let name: String
  public let types: JSONTypes
  public let isRequired: Bool

  public static func required(_ name: String, _ types: JSONTypes) -> ParamField {
    ParamField(name: name, types: types, isRequired: true)
  }

  public static func optional(_ name: String, _ types: JSONTypes) -> ParamField {
    ParamField(name: name, types: types, isRequired: false)
  }
}

/// The JSON types a value may have, as JSON Schema's `type` names them.
public struct JSONTypes: OptionSet, Sendable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let string = JSONTypes(rawValue: 1 << 0)
  public static let boolean = JSONTypes(rawValue: 1 << 1)
  public static let integer = JSONTypes(rawValue: 1 << 2)
  public static let object = JSONTypes(rawValue: 1 << 3)
  public static let array = JSONTypes(rawValue: 1 << 4)
  public static let null = JSONTypes(rawValue: 1 << 5)

  /// JSON Schema's names of these types, sorted.
  public var schemaNames: [String] {
    let names: [(JSONTypes, String)] = [
      (.array, "array"), (.boolean, "boolean"), (.integer, "integer"), (.null, "null"), (.object, "object"),
      (.string, "string"),
    ]
    return names.filter { contains($0.0) }.map(\.1)
  }
}

/// The params of a method that takes none: anything but an empty value is refused.
public struct NoParams: MethodParams {
  public static let fields: [ParamField] = []
  public init(from params: borrowing ParamsReader) throws(ResponseError) { try params.expectNone() }
}

/// What a method answers with, written straight into the reply.
public protocol EncodableResult {
  func encode(into buffer: inout [UInt8])
  /// The same text on the stack, when the result is short and common enough to be
  /// worth it; the default gives up, and `encode(into:)` writes it.
  func encode(into text: inout StackText)
}

extension EncodableResult {
  public func encode(into text: inout StackText) { text.giveUp() }
}

extension JSON: EncodableResult {
  public func encode(into buffer: inout [UInt8]) { encode(into: &buffer, flags: JSON.compactFlags) }
}

/// One call of `Method` as its handler sees it.
public struct Request<Method: RequestMethod> {
  public let params: Method.Params
  public let reply: Reply<Method.Result>
  public let connection: Connection

  @usableFromInline init(params: Method.Params, reply: Reply<Method.Result>, connection: Connection) {
    self.params = params
    self.reply = reply
    self.connection = connection
  }
}

/// Answers a request with its method's result type, now or later (see `Responder`).
public struct Reply<Result: EncodableResult> {
  /// For handlers that keep the answer for later, or must hear of a cancel.
  public let responder: Responder

  @usableFromInline init(responder: Responder) { self.responder = responder }

  public func succeed(_ result: Result) {
    responder.succeed(result)
  }

  public func fail(_ error: ResponseError) {
    responder.fail(error)
  }
}
