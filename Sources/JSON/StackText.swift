/// A short text written on the stack, then appended to an array in one go: an
/// `Array.append(contentsOf:)` costs the same however few bytes it adds, and a reply's
/// envelope took five to eight of them.
///
/// A write past the capacity, or a string that needs escapes, fails the text: nothing
/// is appended, and the caller writes the long way. Inlinable: its writers are called
/// from other modules, a few bytes at a time.
public struct StackText {
  @usableFromInline let base: UnsafeMutablePointer<UInt8>
  @usableFromInline let capacity: Int
  @usableFromInline var used = 0
  @usableFromInline var gaveUp = false

  /// Whether a write did not fit, a string needed escapes, or a writer gave up.
  public var failed: Bool { gaveUp }

  /// Calls `write` with room for `capacity` bytes; appends what it wrote to `buffer`
  /// and returns true unless the text failed (then nothing is appended).
  @inlinable
  public static func append(to buffer: inout [UInt8], capacity: Int, _ write: (inout StackText) -> Void) -> Bool {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { room in
      var text = StackText(base: room.baseAddress!, capacity: capacity)
      write(&text)
      guard !text.gaveUp else { return false }
      buffer.append(contentsOf: UnsafeBufferPointer(start: room.baseAddress!, count: text.used))
      return true
    }
  }

  /// `SmallASCIIString.layoutHolds`, read once for the text's strings (each read of
  /// the static checks that it was made).
  @usableFromInline let smallStringsHold: Bool

  @inlinable @inline(__always)
  init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
    self.base = base
    self.capacity = capacity
    smallStringsHold = SmallASCIIString.layoutHolds
  }

  @inlinable @inline(__always)
  mutating func reserve(_ needed: Int) -> Bool {
    guard !gaveUp, capacity - used >= needed else {
      gaveUp = true
      return false
    }
    return true
  }

  /// For a writer that cannot write its part here: the caller writes the long way.
  @inlinable
  public mutating func giveUp() { gaveUp = true }

  @inlinable
  public mutating func put(_ literal: StaticString) {
    literal.withUTF8Buffer { put($0) }
  }

  @inlinable
  public mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard reserve(bytes.count), let source = bytes.baseAddress else { return }
    (base + used).initialize(from: source, count: bytes.count)
    used += bytes.count
  }

  @inlinable
  public mutating func put(_ byte: UInt8) {
    guard reserve(1) else { return }
    base[used] = byte
    used += 1
  }

  /// Two digits at a time from a table: a reply writes one to three numbers (its id, a
  /// version, an error code), and dividing by ten per digit, twice (to count them, then
  /// to write them), cost more than the rest of the number's writing.
  @inlinable
  public mutating func putDecimal(_ value: Int64) {
    guard reserve(20) else { return }
    if value < 0 { put(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    var index = used + StackText.decimalDigits(magnitude)
    used = index
    StackText.digitPairs.withUTF8Buffer { pairs in
      while magnitude >= 100 {
        let pair = Int(truncatingIfNeeded: magnitude % 100) &* 2
        magnitude /= 100
        index -= 2
        base[index] = pairs[pair]
        base[index + 1] = pairs[pair + 1]
      }
      if magnitude >= 10 {
        let pair = Int(truncatingIfNeeded: magnitude) &* 2
        base[index - 2] = pairs[pair]
        base[index - 1] = pairs[pair + 1]
      } else {
        base[index - 1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude)
      }
    }
  }

  @usableFromInline static let digitPairs: StaticString = """
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899
    """

  @inlinable @inline(__always)
  static func decimalDigits(_ value: UInt64) -> Int {
    var value = value
    var digits = 1
    while value >= 10_000 {
      value /= 10_000
      digits += 4
    }
    if value >= 100 { return digits + (value >= 1_000 ? 3 : 2) }
    return digits + (value >= 10 ? 1 : 0)
  }

  /// The bytes of a JSON string's content (no quotes) when none needs an escape;
  /// otherwise the text fails. Checked eight bytes at a time: a reply's strings (a
  /// kind, an id, an error's message) are mostly longer than a word.
  @inlinable
  public mutating func putStringContent(_ utf8: UnsafeBufferPointer<UInt8>) {
    guard let source = utf8.baseAddress, reserve(utf8.count) else { return }
    let count = utf8.count
    let raw = UnsafeRawPointer(source)
    var flagged: UInt64 = 0
    if count >= 8 {
      var offset = 0
      while count - offset > 8 {
        flagged |= StackText.needsEscape(raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        offset += 8
      }
      // The last word overlaps the one before it.
      flagged |= StackText.needsEscape(raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
    } else if count > 0 {
      // A short text in a word padded with spaces, which need no escape.
      var word: UInt64 = 0x2020_2020_2020_2020
      withUnsafeMutableBytes(of: &word) { $0.baseAddress!.copyMemory(from: raw, byteCount: count) }
      flagged |= StackText.needsEscape(word)
    }
    guard flagged == 0 else { return giveUp() }
    (base + used).initialize(from: source, count: count)
    used += count
  }

  /// Up to 15 ASCII bytes in two words: checked with the bytes past `count` taken as
  /// spaces (which need no escape), and stored whole (the bytes past `count` are
  /// written over by what follows).
  @usableFromInline
  mutating func putSmallASCII(low: UInt64, high: UInt64, count: Int) {
    guard reserve(16) else { return }
    let spaces: UInt64 = 0x2020_2020_2020_2020
    let lowMask: UInt64 = count >= 8 ? ~0 : (1 &<< UInt64(count &* 8)) &- 1
    let highMask: UInt64 = count <= 8 ? 0 : (1 &<< UInt64((count &- 8) &* 8)) &- 1
    let flagged =
      StackText.needsEscape(low & lowMask | spaces & ~lowMask)
      | StackText.needsEscape(high & highMask | spaces & ~highMask)
    guard flagged == 0 else { return giveUp() }
    let target = UnsafeMutableRawPointer(base + used)
    target.storeBytes(of: low.littleEndian, as: UInt64.self)
    target.storeBytes(of: high.littleEndian, toByteOffset: 8, as: UInt64.self)
    used += count
  }

  /// Non-zero when a byte of `word` is below 0x20, a quote or a backslash. Exact for
  /// "any" (a borrow only runs on from a byte that is flagged itself).
  @inlinable @inline(__always)
  static func needsEscape(_ word: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let quotes = word ^ (ones &* 0x22)
    let backslashes = word ^ (ones &* 0x5C)
    let below20 = (word &- ones &* 0x20) & ~word
    let isQuote = (quotes &- ones) & ~quotes
    let isBackslash = (backslashes &- ones) & ~backslashes
    return (below20 | isQuote | isBackslash) & (ones &* 0x80)
  }

  /// The same for a `String`. A small ASCII one (a kind, most ids) is written from its
  /// two words: lending its bytes copied them to the stack, and a short text took two
  /// calls of `memcpy` more.
  @inlinable
  public mutating func putStringContent(_ value: String) {
    if let (low, high, count) = SmallASCIIString.parts(of: value, layoutHolds: smallStringsHold) {
      return putSmallASCII(low: low, high: high, count: count)
    }
    if value.utf8.withContiguousStorageIfAvailable({ putStringContent($0) }) != nil { return }
    var copy = value
    copy.withUTF8 { putStringContent($0) }
  }
}
