import JSON
import JSONRPC
import NetworkModels

extension FollowFailure {
  /// The JSON-RPC error code of this failure (README "EntityState", `error`).
  var errorCode: ErrorCode {
    switch kind {
    case .unavailable: return .backendUnavailable
    case .rejected: return .backendRejected
    case .unauthorized: return .unauthorized
    case .unknownKind: return .unknownKindOrList
    }
  }

  /// `{code, message, retryable}`, as a state's `error` shows it.
  func encodeErrorObject(into buffer: inout [UInt8]) {
    buffer.append(contentsOf: EntityStateText.code)
    appendDecimal(errorCode.rawValue, to: &buffer)
    buffer.append(contentsOf: EntityStateText.message)
    appendJSONString(message, to: &buffer)
    buffer.append(contentsOf: EntityStateText.retryable)
    JSONLiteral.append(isRetryable, to: &buffer)
    buffer.append(UInt8(ascii: "}"))
  }

  /// As a JSON-RPC error, with `data.retryable`, `data.status` and, for a mutation
  /// that was awaited, the rolled-back `data.state`.
  func responseError(state: EntityState? = nil) -> ResponseError {
    let data = JSON.object().set("retryable", .bool(isRetryable))
    switch kind {
    case .rejected(let status), .unauthorized(let status): data.set("status", .integer(status))
    case .unknownKind: if let state { data.set("kind", .string(state.key.kind)) }
    case .unavailable: break
    }
    if let state { data.set("state", state.json) }
    return ResponseError(errorCode, message, data: data)
  }
}

extension EntityState {
  /// Writes this state's JSON text straight into `buffer` (the hot path of every
  /// follow reply and notification).
  func encode(into buffer: inout [UInt8]) {
    buffer.append(contentsOf: EntityStateText.kind)
    appendJSONString(key.kind, to: &buffer)
    buffer.append(contentsOf: EntityStateText.id)
    appendJSONString(key.id, to: &buffer)
    buffer.append(contentsOf: EntityStateText.following)
    JSONLiteral.append(following, to: &buffer)
    buffer.append(contentsOf: EntityStateText.confirmed)
    JSONLiteral.append(confirmed, to: &buffer)
    buffer.append(contentsOf: EntityStateText.pending)
    JSONLiteral.append(pending, to: &buffer)
    buffer.append(contentsOf: EntityStateText.error)
    if let error {
      error.encodeErrorObject(into: &buffer)
    } else {
      buffer.append(contentsOf: JSONLiteral.null)
    }
    buffer.append(contentsOf: EntityStateText.attributes)
    JSONLiteral.append(raw: attributes, to: &buffer)
    buffer.append(contentsOf: EntityStateText.version)
    appendDecimal(Int64(version), to: &buffer)
    buffer.append(UInt8(ascii: "}"))
  }

  var json: JSON {
    var bytes: [UInt8] = []
    encode(into: &bytes)
    return (try? JSON.parse(bytes)) ?? .null()
  }
}

private enum EntityStateText {
  static let kind = Array(#"{"kind":"#.utf8)
  static let id = Array(#","id":"#.utf8)
  static let following = Array(#","following":"#.utf8)
  static let confirmed = Array(#","confirmed":"#.utf8)
  static let pending = Array(#","pending":"#.utf8)
  static let error = Array(#","error":"#.utf8)
  static let code = Array(#"{"code":"#.utf8)
  static let message = Array(#","message":"#.utf8)
  static let retryable = Array(#","retryable":"#.utf8)
  static let attributes = Array(#","attributes":"#.utf8)
  static let version = Array(#","version":"#.utf8)
}

/// The literals every hand-written encoder here needs (EntityState, ListState).
enum JSONLiteral {
  static let null = Array("null".utf8)
  static let `true` = Array("true".utf8)
  static let `false` = Array("false".utf8)

  static func append(_ value: Bool?, to buffer: inout [UInt8]) {
    switch value {
    case .some(true): buffer.append(contentsOf: JSONLiteral.true)
    case .some(false): buffer.append(contentsOf: JSONLiteral.false)
    case .none: buffer.append(contentsOf: JSONLiteral.null)
    }
  }

  /// Already-encoded JSON text, or null.
  static func append(raw text: String?, to buffer: inout [UInt8]) {
    if let text { buffer.append(contentsOf: text.utf8) } else { buffer.append(contentsOf: JSONLiteral.null) }
  }
}
