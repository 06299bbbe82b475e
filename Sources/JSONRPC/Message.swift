import JSON

/// One decoded element of what a peer sent: a request, a notification, or something
/// that is neither and gets an error reply (with its id when one could be read).
public enum IncomingMessage {
  case request(id: RequestID, method: String, params: RequestParams)
  case notification(method: String, params: RequestParams)
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
    var params = json["params"]
    if let value = params {
      switch value.kind {
      case .object, .array: break
      case .null: params = nil
      default:
        self = .invalid(id: id ?? .null, .invalidRequest("params must be an object or an array"))
        return
      }
    }
    let found: RequestParams = params.map { .json($0) } ?? .none
    if let id {
      self = .request(id: id, method: method, params: found)
    } else {
      self = .notification(method: method, params: found)
    }
  }
}

extension IncomingMessage {
  /// Decodes a message from a scan of its top-level members: the common case of one
  /// request object needs jansson only for non-empty `params` (see `JSONScanner`).
  init(scanned object: JSONScanner.ScannedObject, in bytes: UnsafeRawBufferPointer) {
    var id: RequestID?
    if let idMember = object["id"] {
      switch idMember.kind {
      case .integer: id = .integer(idMember.integerValue!)
      case .string: id = .string(idMember.stringValue!)
      case .null: id = .null
      case .real:
        let value = try? JSON.parse(UnsafeRawBufferPointer(rebasing: bytes[idMember.range]))
        id = .real(value?.real ?? 0)
      default:
        self = .invalid(id: nil, .invalidRequest("id must be a string, a number or null"))
        return
      }
    }
    guard let version = object["jsonrpc"], version.hasStringValue("2.0") else {
      self = .invalid(id: id ?? .null, .invalidRequest(#"jsonrpc must be exactly "2.0""#))
      return
    }
    guard let methodMember = object["method"] else {
      if object["result"] != nil || object["error"] != nil {
        self = .response
      } else {
        self = .invalid(id: id ?? .null, .invalidRequest("method is missing"))
      }
      return
    }
    guard methodMember.kind == .string, let method = methodMember.stringValue else {
      self = .invalid(id: id ?? .null, .invalidRequest("method must be a string"))
      return
    }
    var params = RequestParams.none
    if let member = object["params"] {
      let memberBytes = UnsafeRawBufferPointer(rebasing: bytes[member.range])
      switch member.kind {
      case .null: params = .none
      case .object where member.isEmptyContainer: params = .json(JSON.object())
      case .array where member.isEmptyContainer: params = .json(JSON.array())
      case .object:
        // Already validated: a second scan of these few bytes reads the members.
        let copy = Array(memberBytes)
        if let members = copy.withUnsafeBytes({ try? JSONScanner.scanObjectMembers($0) }) {
          params = .scanned(members, bytes: copy)
        } else {
          params = (try? JSON.parse(memberBytes)).map { .json($0) } ?? .none
        }
      case .array:
        params = (try? JSON.parse(memberBytes)).map { .json($0) } ?? .none
      default:
        self = .invalid(id: id ?? .null, .invalidRequest("params must be an object or an array"))
        return
      }
    }
    if let id {
      self = .request(id: id, method: method, params: params)
    } else {
      self = .notification(method: method, params: params)
    }
  }
}

/// Writes the bodies of outgoing messages straight into an output buffer.
public enum MessageEncoder {
  public static func result(id: RequestID, into buffer: inout [UInt8], encodeResult: (inout [UInt8]) -> Void) {
    buffer.append(contentsOf: idPrefix)
    id.encode(into: &buffer)
    buffer.append(contentsOf: resultPrefix)
    encodeResult(&buffer)
    buffer.append(UInt8(ascii: "}"))
  }

  public static func error(id: RequestID?, _ error: ResponseError, into buffer: inout [UInt8]) {
    buffer.append(contentsOf: idPrefix)
    (id ?? .null).encode(into: &buffer)
    buffer.append(contentsOf: errorPrefix)
    error.encode(into: &buffer)
    buffer.append(UInt8(ascii: "}"))
  }

  private static let idPrefix = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
  private static let resultPrefix = Array(#","result":"#.utf8)
  private static let errorPrefix = Array(#","error":"#.utf8)
}
