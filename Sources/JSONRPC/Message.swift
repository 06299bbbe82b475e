import JSON

/// One decoded element of what a peer sent: a request, a notification, or something
/// that is neither and gets an error reply (with its id when one could be read).
/// Not copyable, as the `ParamsReader` it holds is not.
public enum IncomingMessage: ~Copyable {
  case request(id: RequestID, method: String, params: ParamsReader)
  case notification(method: String, params: ParamsReader)
  /// A response from the peer; the server sends no requests, so it is ignored.
  case response
  case invalid(id: RequestID?, ResponseError)

  /// Decodes one message object, following JSON-RPC 2.0 §4 and §5.
  public init(_ json: JSON) {
    guard json.isObject else {
      self = .invalid(id: nil, .invalidRequest("a request must be a JSON object"))
      return
    }
    var id: RequestID?
    let idValue = json["id"]
    if let idValue {
      guard let parsed = RequestID(idValue) else {
        self = .invalid(id: nil, .invalidRequest("id must be a string, a number or null"))
        return
      }
      id = parsed
    }
    guard json["jsonrpc"]?.string == "2.0" else {
      self = .invalid(id: id ?? .null, .invalidRequest(#"jsonrpc must be exactly "2.0""#))
      return
    }
    guard let methodValue = json["method"] else {
      if json["result"] != nil || json["error"] != nil {
        self = .response
      } else {
        self = .invalid(id: id ?? .null, .invalidRequest("method is missing"))
      }
      return
    }
    guard let method = methodValue.string else {
      self = .invalid(id: id ?? .null, .invalidRequest("method must be a string"))
      return
    }
    let params = json["params"]
    if let params {
      switch params.kind {
      case .object, .array, .null: break
      default:
        self = .invalid(id: id ?? .null, .invalidRequest("params must be an object or an array"))
        return
      }
    }
    let found = ParamsReader(params)
    if let id {
      self = .request(id: id, method: method, params: found)
    } else {
      self = .notification(method: method, params: found)
    }
  }

  /// Whether it gets a reply (a request, or what is neither): its place in a batch's.
  public var isAnswered: Bool {
    switch self {
    case .request: return true
    case .invalid: return true
    case .notification: return false
    case .response: return false
    }
  }

  /// The id of a request (nil for anything else).
  public var requestID: RequestID? {
    switch self {
    case .request(let id, _, _): return id
    default: return nil
    }
  }
}

extension IncomingMessage {
  /// Decodes a message from the scan of its envelope: the common case of one request
  /// object needs no jansson tree (see `JSONScanner.scanEnvelope`). Its params are read
  /// from `bytes`, so it must be run before they go.
  ///
  /// `knownMethod` is a method name seen before, packed: when the message names it, its
  /// `String` is reused instead of being made from the bytes again.
  @inline(__always)
  init(envelope: JSONScanner.Envelope, in bytes: UnsafeRawBufferPointer, knownMethod: JSONScanner.Key = "") {
    var id: RequestID?
    if let idMember = envelope.id {
      switch idMember.kind {
      case .integer: id = .integer(idMember.integerValue!)
      case .string: id = .string(envelope.stringValue(idMember)!)
      case .null: id = .null
      case .real:
        let value = try? JSON.parse(UnsafeRawBufferPointer(rebasing: bytes[idMember.range]))
        id = .real(value?.real ?? 0)
      default:
        self = .invalid(id: nil, .invalidRequest("id must be a string, a number or null"))
        return
      }
    }
    guard envelope.isVersion2 else {
      self = .invalid(id: id ?? .null, .invalidRequest(#"jsonrpc must be exactly "2.0""#))
      return
    }
    guard let methodMember = envelope.method else {
      if envelope.hasResult || envelope.hasError {
        self = .response
      } else {
        self = .invalid(id: id ?? .null, .invalidRequest("method is missing"))
      }
      return
    }
    let method: String
    if envelope.hasStringValue(methodMember, knownMethod) {
      method = knownMethod.name
    } else if let value = envelope.stringValue(methodMember) {
      method = value
    } else {
      self = .invalid(id: id ?? .null, .invalidRequest("method must be a string"))
      return
    }
    var reader = ParamsReader(nil)
    if let member = envelope.params {
      let memberBytes = UnsafeRawBufferPointer(rebasing: bytes[member.range])
      switch member.kind {
      case .null: break
      case .object where member.isEmptyContainer: reader = ParamsReader(JSON.object())
      case .array where member.isEmptyContainer: reader = ParamsReader(JSON.array())
      case .object:
        // Its members were scanned with the envelope's.
        reader =
          envelope.hasParamsMembers
          ? ParamsReader(scannedWith: envelope, in: bytes) : ParamsReader(try? JSON.parse(memberBytes))
      case .array:
        reader = ParamsReader(try? JSON.parse(memberBytes))
      default:
        self = .invalid(id: id ?? .null, .invalidRequest("params must be an object or an array"))
        return
      }
    }
    if let id {
      self = .request(id: id, method: method, params: reader)
    } else {
      self = .notification(method: method, params: reader)
    }
  }
}

/// Writes the bodies of outgoing messages straight into an output buffer.
public enum MessageEncoder {
  /// A request, as `netmodel call` and `watch` send them.
  public static func request(id: RequestID, method: String, params: JSON?, into buffer: inout [UInt8]) {
    appendLiteral(#"{"jsonrpc":"2.0","id":"#, to: &buffer)
    id.encode(into: &buffer)
    appendLiteral(#","method":"#, to: &buffer)
    appendJSONString(method, to: &buffer)
    if let params {
      appendLiteral(#","params":"#, to: &buffer)
      params.encode(into: &buffer)
    }
    buffer.append(UInt8(ascii: "}"))
  }

  /// With an integer id and a result that fits on the stack, one append.
  public static func result<Result: EncodableResult>(id: RequestID, _ result: Result, into buffer: inout [UInt8]) {
    if case .integer(let value) = id,
      appendOnStack(id: value, member: #","result":"#, capacity: 768, to: &buffer, { result.encode(into: &$0) })
    {
      return
    }
    self.result(id: id, into: &buffer) { result.encode(into: &$0) }
  }

  public static func result(id: RequestID, into buffer: inout [UInt8], encodeResult: (inout [UInt8]) -> Void) {
    if case .integer(let value) = id {
      appendDecimal(value, between: #"{"jsonrpc":"2.0","id":"#, and: #","result":"#, to: &buffer)
    } else {
      appendLiteral(#"{"jsonrpc":"2.0","id":"#, to: &buffer)
      id.encode(into: &buffer)
      appendLiteral(#","result":"#, to: &buffer)
    }
    encodeResult(&buffer)
    buffer.append(UInt8(ascii: "}"))
  }

  public static func error(id: RequestID?, _ error: ResponseError, into buffer: inout [UInt8]) {
    if case .integer(let value) = id,
      appendOnStack(id: value, member: #","error":"#, capacity: 256, to: &buffer, { error.encode(into: &$0) })
    {
      return
    }
    if case .integer(let value) = id {
      appendDecimal(value, between: #"{"jsonrpc":"2.0","id":"#, and: #","error":"#, to: &buffer)
    } else {
      appendLiteral(#"{"jsonrpc":"2.0","id":"#, to: &buffer)
      (id ?? .null).encode(into: &buffer)
      appendLiteral(#","error":"#, to: &buffer)
    }
    error.encode(into: &buffer)
    buffer.append(UInt8(ascii: "}"))
  }

  /// A reply with an integer id and its `member` (`result` or `error`), written on the
  /// stack and appended once (see `StackText`); false, and nothing written, when
  /// `writeMember` gives up or the text does not fit.
  private static func appendOnStack(
    id: Int64, member: StaticString, capacity: Int, to buffer: inout [UInt8],
    _ writeMember: (inout StackText) -> Void
  ) -> Bool {
    StackText.append(to: &buffer, capacity: capacity) { text in
      text.put(#"{"jsonrpc":"2.0","id":"#)
      text.putDecimal(id)
      text.put(member)
      writeMember(&text)
      text.put(UInt8(ascii: "}"))
    }
  }

  /// The envelope of one notification method, made once: its params are written in
  /// place.
  public struct Notification: Sendable {
    private let prefix: [UInt8]

    public init(method: String) {
      var prefix: [UInt8] = []
      appendLiteral(#"{"jsonrpc":"2.0","method":"#, to: &prefix)
      appendJSONString(method, to: &prefix)
      appendLiteral(#","params":"#, to: &prefix)
      self.prefix = prefix
    }

    public func encode(into buffer: inout [UInt8], params encodeParams: (inout [UInt8]) -> Void) {
      buffer.append(contentsOf: prefix)
      encodeParams(&buffer)
      buffer.append(UInt8(ascii: "}"))
    }
  }
}
