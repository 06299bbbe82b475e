extension JSONScanner {
  /// A JSON-RPC message's top level, as the dispatcher reads it: the members an
  /// envelope has (the last of each name, as jansson keeps), and the members of
  /// `params` when it is a non-empty object. Its other members are validated and
  /// skipped.
  ///
  /// A class, kept by the `Workspace` and refilled by each scan: returned as a struct,
  /// its six members' records were copied twice a message.
  public final class Envelope {
    public internal(set) var id: Entry?
    /// `jsonrpc`.
    /// Whether `jsonrpc` is there and is exactly the string "2.0" (the last one, when
    /// the name is given twice). Only that is asked of it: keeping the member cost its
    /// record, written and then compared.
    public internal(set) var isVersion2 = false
    public internal(set) var method: Entry?
    public internal(set) var params: Entry?
    public internal(set) var hasResult = false
    public internal(set) var hasError = false
    /// The members of `params`, when it is a non-empty object (`hasParamsMembers`):
    /// their ranges too are offsets in the scanned bytes, their long texts in `spills`.
    /// Refilled in place, message after message.
    var paramRecords = Records()
    public internal(set) var hasParamsMembers = false
    /// A bit per params key (`keyBit`): a read of a param that is absent, as most
    /// optional ones are, ends here without a call or a look through the records.
    @usableFromInline var paramKeyBits: UInt64 = 0
    /// `SmallASCIIString.layoutHolds`, read once (each read of the static checks that
    /// it was made).
    let smallStringsHold = SmallASCIIString.layoutHolds
    /// Keys and string values too long to keep inline, or with escapes, of the envelope
    /// and of its params.
    var spills: [String] = []

    /// How many scans refilled this envelope: a reader of its params made for one
    /// message checks, in debug builds, that no later message refilled it.
    public private(set) var generation: UInt64 = 0

    init() {}

    /// Emptied before each scan.
    func reset() {
      generation &+= 1
      id = nil
      isVersion2 = false
      method = nil
      params = nil
      hasResult = false
      hasError = false
      hasParamsMembers = false
      paramKeyBits = 0
      if !spills.isEmpty { spills.removeAll(keepingCapacity: true) }
    }

    /// Whether `params` may have a member named `key`; false when it has none.
    @inlinable
    public func mayHaveParam(_ key: Key) -> Bool {
      paramKeyBits & Envelope.keyBit(key.packed) != 0
    }

    /// Which bit a key sets: from its first word, or every bit for a text that is not
    /// inline (spilled keys are compared by their bytes).
    @inlinable
    static func keyBit(_ text: InlineText) -> UInt64 {
      text.count < 0 ? ~0 : 1 &<< ((text.low &* 0x9E37_79B9_7F4A_7C15) &>> 58)
    }

    /// The params member named `key` (byte for byte; the last of duplicates, as jansson
    /// keeps), read where it lies: no copy of the records.
    public func paramEntry(_ key: Key) -> Entry? {
      guard hasParamsMembers else { return nil }
      return paramRecords.withUnsafeBufferPointer { records in
        var index = records.count
        while index > 0 {
          index -= 1
          if records[index].key.equals(key, spills) { return Entry(record: records[index]) }
        }
        return nil
      }
    }

    /// What a params member holds (`null` reads as absent), found and decoded in one
    /// call: a read through `paramEntry` and `stringValue` was three calls and a copy
    /// of the record.
    public enum ParamValue {
      case absent
      case string(String)
      case bool(Bool)
      case integer(Int64)
      /// An object, an array or a real: where its text is.
      case other(Kind, Range<Int>)
    }

    public func paramValue(_ key: Key) -> ParamValue {
      guard hasParamsMembers, mayHaveParam(key), let record = paramEntry(key)?.record else { return .absent }
      switch record.kind {
      case .null: return .absent
      case .string: return .string(text(record.value))
      case .true: return .bool(true)
      case .false: return .bool(false)
      case .integer: return .integer(record.integer)
      case .object, .array, .real: return .other(record.kind, record.range)
      }
    }

    /// The first params member's key, for the error that names it.
    public var firstParamKey: String? {
      hasParamsMembers ? paramRecords.storage[0].key.string(spills) : nil
    }

    /// The members of `params` as the general scan gives them (for checks: it copies).
    public var paramsMembers: ScannedObject? {
      guard hasParamsMembers, let params else { return nil }
      return ScannedObject(records: paramRecords.array, spills: spills, range: params.range)
    }

    /// The decoded value of a string entry; nil for any other kind.
    public func stringValue(_ entry: Entry) -> String? {
      entry.record.kind == .string ? text(entry.record.value) : nil
    }

    /// A scanned text: the spills read only when it is one (passing them retained and
    /// released them).
    private func text(_ value: InlineText) -> String {
      value.count < 0 ? value.string(spills) : value.inlineString(smallStringsHold: smallStringsHold)
    }

    /// Whether `entry` is a string whose decoded value is `value`.
    public func hasStringValue(_ entry: Entry, _ value: Key) -> Bool {
      entry.record.kind == .string && entry.record.value.equals(value, spills)
    }
  }

  /// Validates `bytes` as exactly one JSON text, accepting and refusing exactly what
  /// `scanObjectMembers` does (with the same errors). Returns nil when it is valid but
  /// not an object; otherwise its envelope, which is `workspace`'s and valid until its
  /// next scan.
  ///
  /// The dispatcher's scan of every message: where `scanObjectMembers` records every
  /// top-level member in an array for the caller to look up, this keeps the few an
  /// envelope has as it meets them.
  public static func scanEnvelope(_ bytes: UnsafeRawBufferPointer, reusing workspace: Workspace) throws(JSONError)
    -> Envelope?
  {
    guard let start = bytes.baseAddress, !bytes.isEmpty else {
      throw JSONError(message: "empty message", line: 1, column: 1, position: 0)
    }
    var scanner = JSONScanner(base: start.assumingMemoryBound(to: UInt8.self), end: bytes.count)
    scanner.skipWhitespace()
    guard scanner.pos < scanner.end else { throw scanner.failure("unexpected end of input", at: scanner.pos) }
    guard scanner.base[scanner.pos] == UInt8(ascii: "{") else {
      let info = try scanner.scanValue(enclosing: 0)
      scanner.skipNULAfterToken(info.kind)
      scanner.skipWhitespace()
      guard scanner.pos == scanner.end else { throw scanner.failure("end of file expected", at: scanner.pos) }
      return nil
    }
    let envelope = workspace.envelope
    envelope.reset()
    try scanner.scanEnvelopeMembers(into: envelope)
    scanner.skipWhitespace()
    guard scanner.pos == scanner.end else { throw scanner.failure("end of file expected", at: scanner.pos) }
    return envelope
  }

  /// `scanObject` at the top level (its errors, its handling of `params`), keeping
  /// the envelope's members in place of a record per member.
  private mutating func scanEnvelopeMembers(into envelope: Envelope) throws(JSONError) {
    pos += 1
    skipWhitespace()
    if pos < end && base[pos] == UInt8(ascii: "}") {
      pos += 1
      return
    }
    while true {
      guard pos < end && base[pos] == UInt8(ascii: "\"") else { throw failure("string or '}' expected", at: pos) }
      pos += 1
      let key: InlineText
      if let short = shortPlainString() {
        key = short
      } else {
        key = try scanKey(spills: &envelope.spills)
      }
      try scanColon()

      let valueStart = pos
      let info: ValueInfo
      var shortValue: InlineText?
      let isParams = key.equals(EnvelopeName.params, envelope.spills)
      if isParams {
        envelope.hasParamsMembers = false
        envelope.paramKeyBits = 0
      }
      if isParams, pos < end, base[pos] == UInt8(ascii: "{") {
        envelope.paramRecords.reuse()
        _ = try scanMembers(enclosing: 1, nestedKey: nil, into: &envelope.paramRecords, spills: &envelope.spills)
        envelope.hasParamsMembers = !envelope.paramRecords.isEmpty
        envelope.paramKeyBits = envelope.paramRecords.withUnsafeBufferPointer {
          $0.reduce(0) { $0 | Envelope.keyBit($1.key) }
        }
        info = ValueInfo(kind: .object, flag: envelope.paramRecords.isEmpty)
      } else if pos < end, base[pos] == UInt8(ascii: "\""), case let short? = skippingQuote({ $0.shortPlainString() }) {
        info = ValueInfo(kind: .string)
        shortValue = short
      } else if pos < end, base[pos] &- 0x30 < 10 || base[pos] == UInt8(ascii: "-") {
        // A number (an id, most often) without the call of the general value scan.
        var integer: Int64 = 0
        let kind = try scanNumber(&integer)
        info = ValueInfo(kind: kind, integer: integer)
      } else {
        info = try scanValue(enclosing: 1)
      }
      let valueEnd = pos
      skipNULAfterToken(info.kind)

      @inline(__always) func entry(_ spills: inout [String]) -> Entry {
        let value =
          info.kind != .string
          ? .none : shortValue ?? text(from: valueStart + 1, to: valueEnd - 1, hasEscapes: info.flag, spills: &spills)
        return Entry(
          record: Record(
            key: key, value: value, range: valueStart..<valueEnd, integer: info.integer, kind: info.kind,
            isEmpty: info.kind.isContainer && info.flag))
      }
      if isParams {
        envelope.params = entry(&envelope.spills)
      } else if key.equals(EnvelopeName.method, envelope.spills) {
        envelope.method = entry(&envelope.spills)
      } else if key.equals(EnvelopeName.id, envelope.spills) {
        envelope.id = entry(&envelope.spills)
      } else if key.equals(EnvelopeName.jsonrpc, envelope.spills) {
        envelope.isVersion2 =
          info.kind == .string
          && (shortValue
            ?? text(from: valueStart + 1, to: valueEnd - 1, hasEscapes: info.flag, spills: &envelope.spills))
            .equals(EnvelopeName.version, envelope.spills)
      } else if key.equals(EnvelopeName.result, envelope.spills) {
        envelope.hasResult = true
      } else if key.equals(EnvelopeName.error, envelope.spills) {
        envelope.hasError = true
      }

      if try anotherMember(enclosing: 0) { continue }
      return
    }
  }
}
