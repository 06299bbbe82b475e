/// A short text written on the stack, then appended to an array in one go: an
/// `Array.append(contentsOf:)` costs ~90 instructions however few bytes it adds, and a
/// reply's envelope took five to eight of them.
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

  @usableFromInline init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
    self.base = base
    self.capacity = capacity
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

  @inlinable
  public mutating func putDecimal(_ value: Int64) {
    guard reserve(21) else { return }
    if value < 0 { put(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    var digits = 1
    var rest = magnitude / 10
    while rest > 0 {
      digits += 1
      rest /= 10
    }
    var index = used + digits
    repeat {
      index -= 1
      base[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
      magnitude /= 10
    } while magnitude > 0
    used += digits
  }

  /// The bytes of a JSON string's content (no quotes) when none needs an escape;
  /// otherwise the text fails.
  @inlinable
  public mutating func putStringContent(_ utf8: UnsafeBufferPointer<UInt8>) {
    for byte in utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
      gaveUp = true
      return
    }
    put(utf8)
  }

  /// The same for a `String`.
  @inlinable
  public mutating func putStringContent(_ value: String) {
    if value.utf8.withContiguousStorageIfAvailable({ putStringContent($0) }) != nil { return }
    var copy = value
    copy.withUTF8 { putStringContent($0) }
  }
}
