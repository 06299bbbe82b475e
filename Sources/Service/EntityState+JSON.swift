import JSON
import JSONRPC
import NetworkModels

extension FollowFailure {
  /// The JSON-RPC error code of this failure (docs/protocol.md "EntityState", `error`).
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
    appendLiteral(#"{"code":"#, to: &buffer)
    appendDecimal(errorCode.rawValue, to: &buffer)
    appendLiteral(#","message":"#, to: &buffer)
    appendJSONString(message, to: &buffer)
    appendLiteral(isRetryable ? #","retryable":true"# : #","retryable":false"#, to: &buffer)
    buffer.append(UInt8(ascii: "}"))
  }

  /// As a JSON-RPC error, with `data.retryable`, `data.status`, `data.retryAfterMs`
  /// and, for a mutation that was awaited, the rolled-back `data.state`.
  func responseError(state: EntityState? = nil) -> ResponseError {
    let data = JSON.object().set("retryable", .bool(isRetryable))
    switch kind {
    case .rejected(let status), .unauthorized(let status): data.set("status", .integer(status))
    case .unknownKind: if let state { data.set("kind", .string(state.key.kind)) }
    case .unavailable:
      // A rate limit's wait: when the API takes requests again, rounded up.
      if let retryAfter, retryAfter > .zero {
        data.set("retryAfterMs", .integer(Int64((retryAfter / .milliseconds(1)).rounded(.up))))
      }
    }
    if let state { data.set("state", state.json) }
    return ResponseError(errorCode, message, data: data)
  }
}

extension EntityState {
  /// Writes this state's JSON text straight into `buffer` (the hot path of every
  /// follow reply and notification). Each member's name goes out with the literal
  /// value that follows it: one append instead of two.
  public func encode(into buffer: inout [UInt8]) {
    if !pending && !requested && error == nil && attributes == nil && staleAgeMs == nil
      && encodeSettled(into: &buffer)
    {
      return
    }
    appendLiteral(#"{"kind":"#, to: &buffer)
    appendJSONString(key.kind, to: &buffer)
    appendLiteral(#","id":"#, to: &buffer)
    appendJSONString(key.id, to: &buffer)
    appendLiteral(flagsLiteral, to: &buffer)
    // The settled state with no error and no attributes, the common reply, in one append.
    if !pending && !requested && error == nil && attributes == nil {
      appendLiteral(Self.settledLiteral, to: &buffer)
    } else {
      encodeUnsettledMembers(into: &buffer)
    }
    appendDecimal(Int64(version), to: &buffer)
    if let staleAgeMs {
      appendLiteral(#","stale":true,"ageMs":"#, to: &buffer)
      appendDecimal(Int64(clamping: staleAgeMs), to: &buffer)
    }
    buffer.append(UInt8(ascii: "}"))
  }

  private static let settledLiteral: StaticString = #","pending":false,"error":null,"attributes":null,"version":"#

  /// Both flags with their names: one literal instead of two.
  private var flagsLiteral: StaticString {
    switch (following, confirmed) {
    case (true?, true?): #","following":true,"confirmed":true"#
    case (true?, false?): #","following":true,"confirmed":false"#
    case (true?, nil): #","following":true,"confirmed":null"#
    case (false?, true?): #","following":false,"confirmed":true"#
    case (false?, false?): #","following":false,"confirmed":false"#
    case (false?, nil): #","following":false,"confirmed":null"#
    case (nil, true?): #","following":null,"confirmed":true"#
    case (nil, false?): #","following":null,"confirmed":false"#
    case (nil, nil): #","following":null,"confirmed":null"#
    }
  }

  /// A settled state (no error, no attributes) whose kind and id need no escapes, on
  /// the stack: with the reply's envelope, one append (see `StackText`). Anything
  /// else gives up, and is written by `encode(into:)`.
  public func encode(into text: inout StackText) {
    guard !pending && !requested && error == nil && attributes == nil && staleAgeMs == nil else {
      return text.giveUp()
    }
    text.put(#"{"kind":""#)
    text.putStringContent(key.kind)
    text.put(#"","id":""#)
    text.putStringContent(key.id)
    text.put(UInt8(ascii: "\""))
    text.put(flagsLiteral)
    text.put(Self.settledLiteral)
    text.putDecimal(Int64(version))
    text.put(UInt8(ascii: "}"))
  }

  /// The same state alone (a notification's), through the stack when it fits.
  private func encodeSettled(into buffer: inout [UInt8]) -> Bool {
    StackText.append(to: &buffer, capacity: 640) { encode(into: &$0) }
  }

  /// `pending`, `requested` (only when true: most APIs have no follow requests, and
  /// their states stay as they were), `error` and `attributes`, and the name of the
  /// `version` that follows.
  private func encodeUnsettledMembers(into buffer: inout [UInt8]) {
    switch (pending, requested) {
    case (true, false): appendLiteral(#","pending":true,"error":"#, to: &buffer)
    case (false, false): appendLiteral(#","pending":false,"error":"#, to: &buffer)
    case (true, true): appendLiteral(#","pending":true,"requested":true,"error":"#, to: &buffer)
    case (false, true): appendLiteral(#","pending":false,"requested":true,"error":"#, to: &buffer)
    }
    if let error {
      error.encodeErrorObject(into: &buffer)
      appendLiteral(#","attributes":"#, to: &buffer)
    } else {
      appendLiteral(#"null,"attributes":"#, to: &buffer)
    }
    if let attributes {
      buffer.append(contentsOf: attributes.utf8)
      appendLiteral(#","version":"#, to: &buffer)
    } else {
      appendLiteral(#"null,"version":"#, to: &buffer)
    }
  }

  var json: JSON {
    var bytes: [UInt8] = []
    encode(into: &bytes)
    return (try? JSON.parse(bytes)) ?? .null()
  }
}

/// The literals every hand-written encoder here needs (EntityState, ListState).
enum JSONLiteral {
  static let null = Array("null".utf8)

  static func append(_ value: Bool?, to buffer: inout [UInt8]) {
    switch value {
    case .some(true): appendLiteral("true", to: &buffer)
    case .some(false): appendLiteral("false", to: &buffer)
    case .none: appendLiteral("null", to: &buffer)
    }
  }

  /// Already-encoded JSON text, or null.
  static func append(raw text: String?, to buffer: inout [UInt8]) {
    if let text { buffer.append(contentsOf: text.utf8) } else { appendLiteral("null", to: &buffer) }
  }
}
