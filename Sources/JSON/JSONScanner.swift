/// A validating, allocation-light scanner for the top level of one JSON text: the fast
/// path for JSON-RPC request envelopes, which are small objects whose members other than
/// `params` are scalars.
///
/// It accepts and rejects exactly what `JSON.parse` (jansson's `json_loadb` with
/// `JSON_DECODE_ANY | JSON_ALLOW_NUL`) does, but builds no tree: it walks the bytes once,
/// validating everything (nested values too), and reports each top-level member's key,
/// kind and byte range. The caller parses only the members it needs as trees (typically a
/// non-trivial `params`) by handing that range to `JSON.parse`.
///
/// What jansson accepts, and so what this accepts:
/// - RFC 8259 grammar; whitespace is space, tab, LF and CR only.
/// - Strings must be valid UTF-8 (no overlong forms, no surrogates, nothing above
///   U+10FFFF); `\u` escapes must pair surrogates correctly; raw bytes below 0x20 are
///   errors; `\u0000` is allowed in values but not in object keys.
/// - Integers (no fraction or exponent) must fit in `Int64`; reals must not overflow to
///   infinity (underflow to zero is fine).
/// - A value may be nested at most `maximumDepth` (2048) deep, counting every value,
///   scalars included: the top-level value is at depth 1.
/// - jansson's quirk: one NUL byte directly after a number or `true`/`false`/`null` is
///   skipped (its lexer "ungets" it and then loses it), so `1\0` and `[1\0,2]` are valid.
public struct JSONScanner {
  /// jansson's `JSON_PARSER_MAX_DEPTH`.
  public static let maximumDepth = 2048

  public enum Kind: UInt8, Equatable, Hashable, Sendable {
    case object, array, string, integer, real, `true`, `false`, null

    /// The kind jansson gives the same value (both booleans are `.bool` there).
    public var jsonKind: JSON.Kind {
      switch self {
      case .object: return .object
      case .array: return .array
      case .string: return .string
      case .integer: return .integer
      case .real: return .real
      case .true, .false: return .bool
      case .null: return .null
      }
    }
  }

  /// One member of the top-level object. Holds no pointer into the scanned bytes: keys and
  /// string values of up to 16 bytes without escapes are kept inline (no allocation);
  /// longer or escaped ones were decoded into `String`s while scanning.
  public struct Member: Sendable {
    let record: Record
    let spills: [String]

    /// The key with its escapes resolved. Short keys are kept as bytes and made into a
    /// `String` on each use; `ScannedObject.member(_:)` finds members without any.
    public var key: String { record.key.string(spills) }
    /// Where the value's text is in the scanned bytes (0-based offsets).
    public var range: Range<Int> { record.range }
    public var kind: Kind { record.kind }
    /// The value of an integer member; nil for any other kind.
    public var integerValue: Int64? { record.kind == .integer ? record.integer : nil }
    /// The decoded value of a string member (escapes resolved); nil for any other kind.
    /// Made on each use, like `key`.
    public var stringValue: String? { record.kind == .string ? record.value.string(spills) : nil }
    /// The value of a `true` or `false` member; nil for any other kind.
    public var boolValue: Bool? {
      switch record.kind {
      case .true: return true
      case .false: return false
      default: return nil
      }
    }
    /// True for `{}` and `[]` (whitespace inside allowed); false for anything else.
    public var isEmptyContainer: Bool { record.isEmpty }

    /// Whether the key is `key`, byte for byte.
    public func hasKey(_ key: String) -> Bool {
      var key = key
      return key.withUTF8 { record.key.equals(InlineText.Packed($0), spills) }
    }

    /// Whether this is a string member whose decoded value is `value`, byte for byte;
    /// makes no `String` (e.g. for checking `"jsonrpc": "2.0"`), and `value` is packed
    /// once, by its caller.
    public func hasStringValue(_ value: Key) -> Bool {
      record.kind == .string && record.value.equals(value, spills)
    }

    public func hasStringValue(_ value: String) -> Bool { hasStringValue(Key(value)) }
  }

  /// The members of a top-level object.
  public struct ScannedObject: Sendable {
    let records: [Record]
    /// Keys and string values too long to keep inline, or with escapes.
    let spills: [String]
    /// Where the object's text is in the scanned bytes (without surrounding whitespace).
    public let range: Range<Int>

    /// In document order, duplicates included.
    public var members: Members { Members(records: records, spills: spills) }

    /// The member named `key` (compared byte for byte, as jansson does, not by Unicode
    /// canonical equivalence); with duplicate keys the last one, which jansson keeps.
    public func member(_ key: Key) -> Member? {
      // Over the records' storage: no bounds check, and no copy of a record not returned.
      let found: Int? = records.withUnsafeBufferPointer { records in
        var index = records.count
        while index > 0 {
          index -= 1
          if records[index].key.equals(key, spills) { return index }
        }
        return nil
      }
      return found.map { Member(record: records[$0], spills: spills) }
    }

    public func member(_ key: String) -> Member? { member(Key(key)) }

    /// The same member as `member(_:)`, as plain data: handing it out and dropping it
    /// costs no reference counting (a `Member` retains the spills, and its `Optional`
    /// is destroyed through a generic value witness). For the per-request readers.
    public func entry(_ key: Key) -> Entry? {
      records.withUnsafeBufferPointer { records in
        var index = records.count
        while index > 0 {
          index -= 1
          if records[index].key.equals(key, spills) { return Entry(record: records[index]) }
        }
        return nil
      }
    }

    /// The decoded value of a string entry of this object; nil for any other kind.
    public func stringValue(_ entry: Entry) -> String? {
      entry.record.kind == .string ? entry.record.value.string(spills) : nil
    }

    /// Whether `entry` of this object is a string whose decoded value is `value`.
    public func hasStringValue(_ entry: Entry, _ value: Key) -> Bool {
      entry.record.kind == .string && entry.record.value.equals(value, spills)
    }

    public subscript(key: Key) -> Member? { member(key) }
  }

  /// A member found by `ScannedObject.entry(_:)`: its string value is read through the
  /// object (`stringValue(_:)`), which holds the spills.
  /// Its accessors are inlinable: called across modules for every param read, each
  /// was a call.
  public struct Entry: Sendable {
    @usableFromInline let record: Record
    @inlinable public var range: Range<Int> { record.range }
    @inlinable public var kind: Kind { record.kind }
    @inlinable public var integerValue: Int64? { record.kind == .integer ? record.integer : nil }
    @inlinable public var isEmptyContainer: Bool { record.isEmpty }
  }

  /// A member's name, packed once: the hot paths keep theirs in `static let`s, so a
  /// lookup compares two words a member instead of first packing the name.
  public struct Key: Sendable, ExpressibleByStringLiteral {
    public let name: String
    /// `count` is -1 for a name too long to be inline: no inline key equals it.
    @usableFromInline let packed: InlineText

    public init(_ name: String) {
      self.name = name
      var bytes = name
      packed = bytes.withUTF8 {
        $0.count <= InlineText.capacity ? InlineText(packed: InlineText.Packed($0)) : InlineText(spill: 0)
      }
    }

    public init(stringLiteral name: String) { self.init(name) }

    /// Whether this key is packed exactly as `other` (for the tests of generated ones).
    public func isPacked(as other: Key) -> Bool {
      (packed.low, packed.high, packed.count) == (other.packed.low, other.packed.high, other.packed.count)
    }

    /// A name already packed, for the names read for every request: a `static let`
    /// that code makes (`Key("kind")`) is checked for initialisation at each use, one
    /// made of literals is laid down at compile time. Written only by
    /// `scripts/gen-protocol` (`ParamKeys.swift`, `JSONScanner+EnvelopeNames.swift`), as
    /// `init(_:)` packs (bytes little-endian, 16 at most); a test checks each one.
    @inlinable @inline(__always)
    public init(name: String, low: UInt64, high: UInt64 = 0, count: Int) {
      self.name = name
      packed = InlineText(low: low, high: high, count: count)
    }
  }

  public struct Members: RandomAccessCollection, Sendable {
    let records: [Record]
    let spills: [String]

    public var startIndex: Int { 0 }
    public var endIndex: Int { records.count }
    public subscript(index: Int) -> Member { Member(record: records[index], spills: spills) }
  }

  /// Members as scanned, in an array a scan may refill in place: emptying an array and
  /// appending again went through `replaceSubrange` for every message.
  struct Records {
    private(set) var storage: [Record] = []
    private(set) var count = 0

    mutating func append(_ record: Record) {
      if count < storage.count {
        storage[count] = record
      } else {
        if storage.capacity < 6 { storage.reserveCapacity(6) }
        storage.append(record)
      }
      count += 1
    }

    /// Empty again, keeping the storage for the next scan.
    mutating func reuse() { count = 0 }

    var isEmpty: Bool { count == 0 }

    /// Exactly the members scanned.
    var array: [Record] { count == storage.count ? storage : Array(storage[..<count]) }

    func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Record>) -> Result) -> Result {
      storage.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[..<count])) }
    }
  }

  /// A member as scanned; plain data, so arrays of them cost nothing to free.
  @usableFromInline struct Record: Sendable {
    var key: InlineText
    var value: InlineText
    @usableFromInline var range: Range<Int>
    @usableFromInline var integer: Int64
    @usableFromInline var kind: Kind
    @usableFromInline var isEmpty: Bool
  }

  /// A key or string value: up to 16 UTF-8 bytes packed into two words, or the index of
  /// a `String` in the spills.
  @usableFromInline struct InlineText: Sendable {
    static let capacity = 16

    /// Bytes packed little-endian into two words (zero beyond `count`), and the bytes
    /// themselves, for comparing longer text without copying.
    struct Packed {
      var low: UInt64 = 0
      var high: UInt64 = 0
      let count: Int
      let bytes: UnsafeBufferPointer<UInt8>

      /// Packs `bytes`; when at least 16 bytes from their start may be read, it loads two
      /// words instead of copying byte by byte.
      @inline(__always)
      init(_ bytes: UnsafeBufferPointer<UInt8>, readable: Int = 0) {
        self.bytes = bytes
        count = bytes.count
        guard count <= InlineText.capacity, let base = bytes.baseAddress else { return }
        if readable >= 16 {
          let raw = UnsafeRawPointer(base)
          let first = UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))
          let second = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
          if count < 8 {
            low = first & ((1 &<< UInt64(count &* 8)) &- 1)
          } else {
            low = first
            high = count == 16 ? second : second & ((1 &<< UInt64((count &- 8) &* 8)) &- 1)
          }
        } else {
          var words: (UInt64, UInt64) = (0, 0)
          withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(start: base, count: count)) }
          low = UInt64(littleEndian: words.0)
          high = UInt64(littleEndian: words.1)
        }
      }
    }

    @usableFromInline let low: UInt64
    @usableFromInline let high: UInt64
    /// The byte count when inline; `-1 - index` when the text is `spills[index]`.
    @usableFromInline let count: Int

    static let none = InlineText(low: 0, high: 0, count: 0)

    @inlinable @inline(__always)
    init(low: UInt64, high: UInt64, count: Int) {
      self.low = low
      self.high = high
      self.count = count
    }

    @inline(__always)
    init(packed: Packed) {
      self.init(low: packed.low, high: packed.high, count: packed.count)
    }

    init(spill index: Int) {
      self.init(low: 0, high: 0, count: -1 - index)
    }

    func string(_ spills: [String]) -> String {
      count < 0 ? spills[-1 - count] : inlineString
    }

    /// The text of an inline (not spilled) value.
    var inlineString: String { inlineString(smallStringsHold: SmallASCIIString.layoutHolds) }

    /// The same, with `SmallASCIIString.layoutHolds` read by the caller.
    func inlineString(smallStringsHold: Bool) -> String {
      if count == 0 { return "" }
      if count < 16, (low | high) & 0x8080_8080_8080_8080 == 0, smallStringsHold {
        return SmallASCIIString.make(low: low, high: high, count: count)
      }
      // Made in place (a small string needs no allocation): `String(decoding:as:)` went
      // through its generic repairing path.
      let (low, high, count) = (self.low.littleEndian, self.high.littleEndian, self.count)
      return String(unsafeUninitializedCapacity: count) { buffer in
        var words = (low, high)
        withUnsafeBytes(of: &words) { raw in
          buffer.baseAddress!.initialize(from: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
        }
        return count
      }
    }

    @inline(__always)
    func equals(_ key: Key, _ spills: [String]) -> Bool {
      if count >= 0 { return count == key.packed.count && low == key.packed.low && high == key.packed.high }
      return spills[-1 - count].utf8.elementsEqual(key.name.utf8)
    }

    @inline(__always)
    func equals(_ other: Packed, _ spills: [String]) -> Bool {
      if count >= 0 { return count == other.count && low == other.low && high == other.high }
      var spilled = spills[-1 - count]
      guard spilled.utf8.count == other.count else { return false }
      return spilled.withUTF8 { mine in
        for index in 0..<mine.count where mine[index] != other.bytes[index] { return false }
        return true
      }
    }
  }

  /// Validates `bytes` as exactly one JSON text. Returns nil when it is valid but its
  /// top-level value is not an object; otherwise that object's members.
  public static func scanObjectMembers(_ bytes: UnsafeRawBufferPointer) throws(JSONError) -> ScannedObject? {
    try scanObjectMembers(bytes, nested: nil)?.object
  }

  /// The same, and the members of the top-level member named `nestedKey` when it is a
  /// non-empty object (a request's `params`), read in the same pass: their ranges too
  /// are offsets in `bytes`.
  public static func scanObjectMembers(_ bytes: UnsafeRawBufferPointer, withMembersOf nestedKey: String)
    throws(JSONError) -> (object: ScannedObject, nested: ScannedObject?)?
  {
    try scanObjectMembers(bytes, nested: Key(nestedKey))
  }

  /// What the dispatcher's envelope scan (`scanEnvelope`) keeps from one message to the
  /// next: the envelope, whose arrays are refilled in place instead of allocated and
  /// freed a message. Use on one thread.
  public final class Workspace {
    let envelope = Envelope()

    public init() {}
  }

  private static func scanObjectMembers(_ bytes: UnsafeRawBufferPointer, nested nestedKey: Key?)
    throws(JSONError) -> (object: ScannedObject, nested: ScannedObject?)?
  {
    guard let start = bytes.baseAddress, !bytes.isEmpty else {
      throw JSONError(message: "empty message", line: 1, column: 1, position: 0)
    }
    var scanner = JSONScanner(base: start.assumingMemoryBound(to: UInt8.self), end: bytes.count)
    return try scanner.scanTopLevel(nestedKey: nestedKey)
  }

  // MARK: - State

  let base: UnsafePointer<UInt8>
  let end: Int
  var pos = 0

  init(base: UnsafePointer<UInt8>, end: Int) {
    self.base = base
    self.end = end
  }

  /// What `scanValue` learned about one value besides its kind.
  struct ValueInfo {
    var kind: Kind
    var integer: Int64 = 0
    /// Strings: had escapes. Containers: empty.
    var flag = false
  }

  // MARK: - Top level

  private mutating func scanTopLevel(nestedKey: Key?) throws(JSONError) -> (
    object: ScannedObject, nested: ScannedObject?
  )? {
    skipWhitespace()
    guard pos < end else { throw failure("unexpected end of input", at: pos) }
    guard base[pos] == UInt8(ascii: "{") else {
      let info = try scanValue(enclosing: 0)
      skipNULAfterToken(info.kind)
      skipWhitespace()
      guard pos == end else { throw failure("end of file expected", at: pos) }
      return nil
    }
    let scanned = try scanObject(enclosing: 0, nestedKey: nestedKey)
    skipWhitespace()
    guard pos == end else { throw failure("end of file expected", at: pos) }
    return scanned
  }

  /// Scans the object at `pos` that `enclosing` containers enclose, recording its
  /// members; with `nestedKey`, also those of that member's object (the last one of
  /// that name, which is the one `member(_:)` finds).
  mutating func scanObject(enclosing: Int, nestedKey: Key?) throws(JSONError) -> (
    object: ScannedObject, nested: ScannedObject?
  ) {
    let objectStart = pos
    var records = Records()
    var spills: [String] = []
    let nested = try scanMembers(enclosing: enclosing, nestedKey: nestedKey, into: &records, spills: &spills)
    return (ScannedObject(records: records.array, spills: spills, range: objectStart..<pos), nested)
  }

  /// The loop of `scanObject`: appends the members of the object at `pos` to `records`
  /// (and the texts they spill to `spills`), and returns the members of the `nestedKey`
  /// object. The envelope scan passes the arrays it keeps from one message to the next.
  mutating func scanMembers(
    enclosing: Int, nestedKey: Key?, into records: inout Records, spills: inout [String]
  ) throws(JSONError) -> ScannedObject? {
    pos += 1
    skipWhitespace()
    var nested: ScannedObject?
    if pos < end && base[pos] == UInt8(ascii: "}") {
      pos += 1
      return nil
    }
    while true {
      guard pos < end && base[pos] == UInt8(ascii: "\"") else {
        throw failure("string or '}' expected", at: pos)
      }
      pos += 1
      let key: InlineText
      if let short = shortPlainString() {
        key = short
      } else {
        key = try scanKey(spills: &spills)
      }
      try scanColon()

      let valueStart = pos
      let info: ValueInfo
      var shortValue: InlineText?
      let isNested = nestedKey.map { key.equals($0, spills) } ?? false
      if isNested, pos < end, base[pos] == UInt8(ascii: "{") {
        let object = try scanObject(enclosing: enclosing + 1, nestedKey: nil).object
        nested = object.records.isEmpty ? nil : object
        info = ValueInfo(kind: .object, flag: object.records.isEmpty)
      } else if pos < end, base[pos] == UInt8(ascii: "\""), case let short? = skippingQuote({ $0.shortPlainString() }) {
        if isNested { nested = nil }
        info = ValueInfo(kind: .string)
        shortValue = short
      } else {
        if isNested { nested = nil }
        info = try scanValue(enclosing: enclosing + 1)
      }
      let valueEnd = pos
      skipNULAfterToken(info.kind)
      let value =
        info.kind != .string
        ? .none
        : shortValue ?? text(from: valueStart + 1, to: valueEnd - 1, hasEscapes: info.flag, spills: &spills)
      records.append(
        Record(
          key: key, value: value, range: valueStart..<valueEnd, integer: info.integer, kind: info.kind,
          isEmpty: info.kind.isContainer && info.flag))

      if try anotherMember(enclosing: enclosing) { continue }
      return nested
    }
  }

  /// After a member of an object that `enclosing` containers enclose: true at a comma
  /// (another member follows, `pos` at it), false at the closing brace.
  @inline(__always)
  mutating func anotherMember(enclosing: Int) throws(JSONError) -> Bool {
    skipWhitespace()
    // jansson's messages: a nested object ends early like any other container.
    guard pos < end else { throw failure(enclosing == 0 ? "'}' expected" : "unexpected end of input", at: pos) }
    let c = base[pos]
    pos += 1
    if c == UInt8(ascii: ",") {
      skipWhitespace()
      return true
    }
    guard c == UInt8(ascii: "}") else { throw failure("'}' expected", at: pos - 1) }
    return false
  }

  // MARK: - Values

  /// Scans the value at `pos` (whitespace already skipped) that `enclosing` containers
  /// enclose, and everything inside it. Leaves `pos` right after it.
  @inline(__always)
  mutating func scanValue(enclosing: Int) throws(JSONError) -> ValueInfo {
    if enclosing >= Self.maximumDepth { throw failure("maximum parsing depth reached", at: pos) }
    guard pos < end else { throw failure("unexpected end of input", at: pos) }
    let c = base[pos]
    switch c {
    case UInt8(ascii: "\""):
      pos += 1
      let flags = try scanString()
      return ValueInfo(kind: .string, flag: flags & Self.sawEscape != 0)
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      var value: Int64 = 0
      let kind = try scanNumber(&value)
      return ValueInfo(kind: kind, integer: value)
    case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
      return ValueInfo(kind: try scanLiteral(c))
    case UInt8(ascii: "{"):
      return ValueInfo(kind: .object, flag: try scanContainer(enclosing: enclosing))
    case UInt8(ascii: "["):
      return ValueInfo(kind: .array, flag: try scanContainer(enclosing: enclosing))
    default:
      throw failure("invalid token", at: pos)
    }
  }

  /// Scans the object or array at `pos` and everything nested in it, without recursion
  /// (2048 levels would overflow a small thread stack). Returns whether it is empty.
  private mutating func scanContainer(enclosing: Int) throws(JSONError) -> Bool {
    // The open containers, innermost last: a bit per level for the first 64 (set for an
    // object), an array (allocated only when nesting is that deep) for the rest.
    var nesting = 0
    var objectBits: UInt64 = 0
    var deeper: [Bool] = []

    value: while true {
      // A value starts at `pos`.
      if enclosing + nesting >= Self.maximumDepth { throw failure("maximum parsing depth reached", at: pos) }
      guard pos < end else { throw failure("unexpected end of input", at: pos) }
      let c = base[pos]
      switch c {
      case UInt8(ascii: "{"), UInt8(ascii: "["):
        let isObject = c == UInt8(ascii: "{")
        pos += 1
        skipWhitespace()
        if pos < end && base[pos] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
          pos += 1
          if nesting == 0 { return true }
        } else {
          if nesting < 64 {
            let bit: UInt64 = 1 << UInt64(nesting)
            objectBits = isObject ? objectBits | bit : objectBits & ~bit
          } else {
            deeper.append(isObject)
          }
          nesting += 1
          if isObject { try scanKeyAndColon() }
          continue value
        }
      case UInt8(ascii: "\""):
        pos += 1
        _ = try scanString()
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        var ignored: Int64 = 0
        _ = try scanNumber(&ignored)
        skipNUL()
      case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
        _ = try scanLiteral(c)
        skipNUL()
      default:
        throw failure("invalid token", at: pos)
      }

      // After a value inside the innermost open container.
      while true {
        skipWhitespace()
        guard pos < end else { throw failure("unexpected end of input", at: pos) }
        let level = nesting - 1
        let inObject = level < 64 ? (objectBits >> UInt64(level)) & 1 != 0 : deeper[deeper.count - 1]
        let c = base[pos]
        if c == UInt8(ascii: ",") {
          pos += 1
          skipWhitespace()
          if inObject { try scanKeyAndColon() }
          continue value
        }
        guard c == (inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
          throw failure(inObject ? "'}' expected" : "']' expected", at: pos)
        }
        pos += 1
        nesting -= 1
        if nesting >= 64 { deeper.removeLast() }
        if nesting == 0 { return false }
      }
    }
  }

  /// A member's `"key" :` inside a nested object, leaving `pos` at its value.
  @inline(__always)
  private mutating func scanKeyAndColon() throws(JSONError) {
    guard pos < end && base[pos] == UInt8(ascii: "\"") else { throw failure("string or '}' expected", at: pos) }
    let keyStart = pos
    pos += 1
    if try scanString() & Self.sawNULEscape != 0 {
      throw failure("NUL byte in object key not supported", at: keyStart)
    }
    try scanColon()
  }

  /// A key whose opening quote is at `pos - 1`, scanned the general way; leaves `pos`
  /// after its closing quote.
  mutating func scanKey(spills: inout [String]) throws(JSONError) -> InlineText {
    let keyStart = pos
    let flags = try scanString()
    if flags & Self.sawNULEscape != 0 { throw failure("NUL byte in object key not supported", at: keyStart - 1) }
    return text(from: keyStart, to: pos - 1, hasEscapes: flags & Self.sawEscape != 0, spills: &spills)
  }

  /// `read` after the opening quote at `pos`; when it finds nothing, `pos` is left at
  /// the quote.
  @inline(__always)
  mutating func skippingQuote(_ read: (inout JSONScanner) -> InlineText?) -> InlineText? {
    pos &+= 1
    if let found = read(&self) { return found }
    pos &-= 1
    return nil
  }

  @inline(__always)
  mutating func scanColon() throws(JSONError) {
    skipWhitespace()
    guard pos < end && base[pos] == UInt8(ascii: ":") else { throw failure("':' expected", at: pos) }
    pos += 1
    skipWhitespace()
  }

  @inline(__always)
  mutating func skipWhitespace() {
    while pos < end {
      let c = base[pos]
      guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
      pos += 1
    }
  }

  /// jansson loses one NUL byte that directly follows a number or literal.
  @inline(__always)
  private mutating func skipNUL() {
    if pos < end && base[pos] == 0 { pos += 1 }
  }

  @inline(__always)
  mutating func skipNULAfterToken(_ kind: Kind) {
    switch kind {
    case .integer, .real, .true, .false, .null: skipNUL()
    case .object, .array, .string: break
    }
  }

  // MARK: - Literals

  @inline(__always)
  private mutating func scanLiteral(_ first: UInt8) throws(JSONError) -> Kind {
    let available = end - pos
    if available >= 4 {
      let word = UInt32(littleEndian: UnsafeRawPointer(base + pos).loadUnaligned(as: UInt32.self))
      switch first {
      case UInt8(ascii: "t") where word == 0x6575_7274:  // "true"
        pos += 4
        return .true
      case UInt8(ascii: "n") where word == 0x6C6C_756E:  // "null"
        pos += 4
        return .null
      case UInt8(ascii: "f") where word == 0x736C_6166 && available >= 5 && base[pos + 4] == UInt8(ascii: "e"):
        pos += 5
        return .false
      default:
        break
      }
    }
    throw failure("invalid token", at: pos)
  }

  // MARK: - Numbers

  /// Scans a number at `pos`. For an integer, stores its value in `value`.
  @inline(__always)
  mutating func scanNumber(_ value: inout Int64) throws(JSONError) -> Kind {
    let start = pos
    let negative = base[pos] == UInt8(ascii: "-")
    if negative { pos += 1 }
    guard pos < end else { throw failure("invalid number", at: pos) }
    var magnitude: UInt64 = 0
    // Digits of the integer part that count for its size ("0" counts none).
    var digits = 0
    let first = base[pos] &- 0x30
    if first == 0 {
      pos += 1
      if pos < end && base[pos] &- 0x30 < 10 { throw failure("invalid number (leading zero)", at: pos) }
    } else if first < 10 {
      magnitude = UInt64(first)
      digits = 1
      pos += 1
      while pos < end {
        let digit = base[pos] &- 0x30
        guard digit < 10 else { break }
        // Nineteen digits always fit in a UInt64; a twentieth overflows Int64 anyway,
        // which `digits` shows.
        if digits < 19 { magnitude = magnitude &* 10 &+ UInt64(digit) }
        digits += 1
        pos += 1
      }
    } else {
      throw failure("invalid number", at: pos)
    }

    if pos < end {
      let c = base[pos]
      if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
        try scanRealTail(start: start, integerDigits: digits)
        return .real
      }
    }
    let limit: UInt64 = negative ? 1 << 63 : UInt64(Int64.max)
    guard digits <= 19 && magnitude <= limit else {
      throw failure(negative ? "too big negative integer" : "too big integer", at: start)
    }
    value = negative ? Int64(bitPattern: 0 &- magnitude) : Int64(bitPattern: magnitude)
    return .integer
  }

  /// The fraction and exponent of a real whose integer part ends at `pos`.
  private mutating func scanRealTail(start: Int, integerDigits: Int) throws(JSONError) {
    if base[pos] == UInt8(ascii: ".") {
      pos += 1
      guard pos < end && base[pos] &- 0x30 < 10 else { throw failure("invalid number", at: pos) }
      pos += 1
      while pos < end && base[pos] &- 0x30 < 10 { pos += 1 }
    }
    var exponent = 0
    if pos < end && (base[pos] == UInt8(ascii: "e") || base[pos] == UInt8(ascii: "E")) {
      pos += 1
      var negativeExponent = false
      if pos < end && (base[pos] == UInt8(ascii: "+") || base[pos] == UInt8(ascii: "-")) {
        negativeExponent = base[pos] == UInt8(ascii: "-")
        pos += 1
      }
      guard pos < end && base[pos] &- 0x30 < 10 else { throw failure("invalid number", at: pos) }
      while pos < end {
        let digit = base[pos] &- 0x30
        guard digit < 10 else { break }
        if exponent < 1_000_000 { exponent = exponent * 10 + Int(digit) }
        pos += 1
      }
      if negativeExponent { exponent = -exponent }
    }
    // The value is below 10^(integerDigits + exponent); below 10^308 it cannot overflow.
    // Only beyond that ask the correctly rounding parser (as jansson asks strtod).
    if integerDigits + exponent > 308 {
      let text = String(decoding: UnsafeBufferPointer(start: base + start, count: pos - start), as: UTF8.self)
      if let real = Double(text), real.isInfinite {
        throw failure("real number overflow", at: start)
      }
    }
  }

  // MARK: - Strings

  static let sawEscape: UInt8 = 1
  static let sawNULEscape: UInt8 = 2

  /// Scans a string whose opening quote is at `pos - 1`, leaving `pos` after its closing
  /// quote. Returns `sawEscape` and `sawNULEscape` flags.
  @inline(__always)
  mutating func scanString() throws(JSONError) -> UInt8 {
    var flags: UInt8 = 0
    while true {
      // Skip plain bytes eight at a time, stopping at the first that needs a look.
      while end - pos >= 8 {
        let word = UInt64(littleEndian: UnsafeRawPointer(base + pos).loadUnaligned(as: UInt64.self))
        let special = Self.specialBytes(word)
        if special != 0 {
          pos += special.trailingZeroBitCount &>> 3
          break
        }
        pos += 8
      }
      guard pos < end else { throw failure("premature end of input", at: pos) }
      let c = base[pos]
      if c == UInt8(ascii: "\"") {
        pos += 1
        return flags
      } else if c == UInt8(ascii: "\\") {
        flags |= Self.sawEscape
        if try scanEscape() { flags |= Self.sawNULEscape }
      } else if c < 0x20 {
        throw failure(c == 0x0A ? "unexpected newline" : "control character 0x\(String(c, radix: 16))", at: pos)
      } else if c < 0x80 {
        pos += 1
      } else {
        try scanUTF8Sequence(c)
      }
    }
  }

  /// A mask with the high bit set in the lowest byte of `word` (in memory order) that is
  /// below 0x20, a quote, a backslash or at least 0x80 (higher flagged bytes may be false
  /// alarms); zero when there is none.
  @inline(__always)
  private static func specialBytes(_ word: UInt64) -> UInt64 {
    // What a JSON string's text must escape (as `StackText` checks it), and non-ASCII.
    StackText.needsEscape(word) | word & 0x8080_8080_8080_8080
  }

  /// The string whose opening quote is at `pos - 1`, when it is short and plain (at
  /// most 15 bytes, ASCII, no escape or control byte): packed as `text` packs it,
  /// straight from two words, with `pos` left after its closing quote. Nil otherwise,
  /// with `pos` unmoved, for the general scan. A request's keys and most of its string
  /// values are such strings, which were scanned and then packed in two passes.
  @inline(__always)
  mutating func shortPlainString() -> InlineText? {
    let available = end &- pos
    let first: UInt64
    let second: UInt64
    if available >= 16 {
      let raw = UnsafeRawPointer(base + pos)
      first = UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))
      second = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    } else {
      // Near the end, a copy: its zero padding is a control byte, so a string cut
      // short is left to the general scan, which reports it.
      guard available > 0 else { return nil }
      var words: (UInt64, UInt64) = (0, 0)
      withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: base + pos, byteCount: available) }
      first = UInt64(littleEndian: words.0)
      second = UInt64(littleEndian: words.1)
    }
    // The lowest flagged byte is exact (only higher ones may be false alarms).
    let firstSpecial = Self.specialBytes(first)
    if firstSpecial != 0 {
      let count = firstSpecial.trailingZeroBitCount &>> 3
      guard (first &>> UInt64(count &* 8)) & 0xFF == 0x22 else { return nil }
      pos &+= count &+ 1
      return InlineText(low: first & ((1 &<< UInt64(count &* 8)) &- 1), high: 0, count: count)
    }
    let secondSpecial = Self.specialBytes(second)
    guard secondSpecial != 0 else { return nil }
    let secondCount = secondSpecial.trailingZeroBitCount &>> 3
    guard (second &>> UInt64(secondCount &* 8)) & 0xFF == 0x22 else { return nil }
    pos &+= 9 &+ secondCount
    return InlineText(low: first, high: second & ((1 &<< UInt64(secondCount &* 8)) &- 1), count: 8 &+ secondCount)
  }

  /// Scans the escape at `pos` (a backslash). Returns whether it was `\u0000`.
  @inline(__always)
  private mutating func scanEscape() throws(JSONError) -> Bool {
    let start = pos
    pos += 1
    guard pos < end else { throw failure("premature end of input", at: pos) }
    switch base[pos] {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
      UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
      pos += 1
      return false
    case UInt8(ascii: "u"):
      guard let unit = hex4(at: pos + 1) else { throw failure("invalid escape", at: start) }
      pos += 5
      if unit & 0xFC00 == 0xD800 {
        guard pos + 1 < end && base[pos] == UInt8(ascii: "\\") && base[pos + 1] == UInt8(ascii: "u"),
          let low = hex4(at: pos + 2), low & 0xFC00 == 0xDC00
        else { throw failure("invalid Unicode escape (unpaired high surrogate)", at: start) }
        pos += 6
      } else if unit & 0xFC00 == 0xDC00 {
        throw failure("invalid Unicode escape (lone low surrogate)", at: start)
      }
      return unit == 0
    default:
      throw failure("invalid escape", at: start)
    }
  }

  /// The value of four hex digits at `index`; nil when they are not.
  @inline(__always)
  private func hex4(at index: Int) -> UInt32? {
    guard end - index >= 4 else { return nil }
    var value: UInt32 = 0
    for offset in 0..<4 {
      let c = base[index + offset]
      let digit: UInt8
      if c &- 0x30 < 10 {
        digit = c &- 0x30
      } else if (c | 0x20) &- 0x61 < 6 {
        digit = (c | 0x20) &- 0x61 + 10
      } else {
        return nil
      }
      value = value << 4 | UInt32(digit)
    }
    return value
  }

  /// Checks one multi-byte UTF-8 sequence whose lead byte `lead` is at `pos`, exactly as
  /// jansson's `utf8_check_first`/`utf8_check_full` do.
  private mutating func scanUTF8Sequence(_ lead: UInt8) throws(JSONError) {
    let available = end - pos
    @inline(__always) func continuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }
    switch lead {
    case 0xC2...0xDF:
      if available >= 2 && continuation(base[pos + 1]) {
        pos += 2
        return
      }
    case 0xE0...0xEF:
      if available >= 3 {
        let second = base[pos + 1]
        let low: UInt8 = lead == 0xE0 ? 0xA0 : 0x80  // no overlong forms
        let high: UInt8 = lead == 0xED ? 0x9F : 0xBF  // no surrogates
        if second >= low && second <= high && continuation(base[pos + 2]) {
          pos += 3
          return
        }
      }
    case 0xF0...0xF4:
      if available >= 4 {
        let second = base[pos + 1]
        let low: UInt8 = lead == 0xF0 ? 0x90 : 0x80  // no overlong forms
        let high: UInt8 = lead == 0xF4 ? 0x8F : 0xBF  // nothing above U+10FFFF
        if second >= low && second <= high && continuation(base[pos + 2]) && continuation(base[pos + 3]) {
          pos += 4
          return
        }
      }
    default:
      break
    }
    throw failure("unable to decode byte 0x\(String(lead, radix: 16))", at: pos)
  }

  /// The contents of a validated string, `from..<to` (between its quotes): inline when
  /// short and free of escapes, else decoded.
  @inline(__always)
  func text(from start: Int, to stop: Int, hasEscapes: Bool, spills: inout [String]) -> InlineText {
    if !hasEscapes && stop - start <= InlineText.capacity {
      let bytes = UnsafeBufferPointer(start: base + start, count: stop - start)
      return InlineText(packed: InlineText.Packed(bytes, readable: end - start))
    }
    spills.append(decodeString(from: start, to: stop, hasEscapes: hasEscapes))
    return InlineText(spill: spills.count - 1)
  }

  /// The text of a validated string's contents, `from..<to` (between its quotes).
  private func decodeString(from start: Int, to stop: Int, hasEscapes: Bool) -> String {
    let count = stop - start
    guard hasEscapes else {
      return String(decoding: UnsafeBufferPointer(start: base + start, count: count), as: UTF8.self)
    }
    // Resolving escapes never lengthens the text (jansson relies on the same).
    return String(unsafeUninitializedCapacity: count) { out in
      var index = start
      var length = 0
      while index < stop {
        let c = base[index]
        guard c == UInt8(ascii: "\\") else {
          out[length] = c
          length += 1
          index += 1
          continue
        }
        let escape = base[index + 1]
        index += 2
        let plain: UInt8
        switch escape {
        case UInt8(ascii: "b"): plain = 0x08
        case UInt8(ascii: "f"): plain = 0x0C
        case UInt8(ascii: "n"): plain = 0x0A
        case UInt8(ascii: "r"): plain = 0x0D
        case UInt8(ascii: "t"): plain = 0x09
        case UInt8(ascii: "u"):
          var scalar = hex4(at: index)!
          index += 4
          if scalar & 0xFC00 == 0xD800 {
            let low = hex4(at: index + 2)!
            index += 6
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
          }
          length += Self.encodeUTF8(scalar, into: out, at: length)
          continue
        default: plain = escape  // quote, backslash, slash
        }
        out[length] = plain
        length += 1
      }
      return length
    }
  }

  @inline(__always)
  private static func encodeUTF8(_ scalar: UInt32, into out: UnsafeMutableBufferPointer<UInt8>, at index: Int) -> Int {
    switch scalar {
    case 0..<0x80:
      out[index] = UInt8(scalar)
      return 1
    case 0x80..<0x800:
      out[index] = UInt8(0xC0 | scalar >> 6)
      out[index + 1] = UInt8(0x80 | scalar & 0x3F)
      return 2
    case 0x800..<0x10000:
      out[index] = UInt8(0xE0 | scalar >> 12)
      out[index + 1] = UInt8(0x80 | scalar >> 6 & 0x3F)
      out[index + 2] = UInt8(0x80 | scalar & 0x3F)
      return 3
    default:
      out[index] = UInt8(0xF0 | scalar >> 18)
      out[index + 1] = UInt8(0x80 | scalar >> 12 & 0x3F)
      out[index + 2] = UInt8(0x80 | scalar >> 6 & 0x3F)
      out[index + 3] = UInt8(0x80 | scalar & 0x3F)
      return 4
    }
  }

  // MARK: - Errors

  /// An error at byte `position`, with jansson-style 1-based line and column (the column
  /// counts characters, not bytes). Worked out only now, so scanning tracks no lines.
  @inline(never)
  func failure(_ message: String, at position: Int) -> JSONError {
    let position = min(position, end)
    var line = 1
    var column = 1
    for index in 0..<position {
      let byte = base[index]
      if byte == 0x0A {
        line += 1
        column = 1
      } else if byte & 0xC0 != 0x80 {
        column += 1
      }
    }
    return JSONError(message: message, line: line, column: column, position: position)
  }
}

extension JSONScanner.Kind {
  @inline(__always)
  var isContainer: Bool { self == .object || self == .array }
}
