/// A short ASCII text made as the standard library lays out a small string (its bytes
/// in two words, the count and flags in the top byte): a request's kind and id are
/// such texts, and making each through `String(unsafeUninitializedCapacity:)`, which
/// validates UTF-8, cost ~110 instructions. Used only when `layoutHolds`.
@usableFromInline enum SmallASCIIString {
  @inline(__always)
  static func make(low: UInt64, high: UInt64, count: Int) -> String {
    unsafeBitCast(bits(low: low, high: high, count: count), to: String.self)
  }

  /// The top byte of a small ASCII string of `count` bytes: small, ASCII, the count.
  @inline(__always)
  static func bits(low: UInt64, high: UInt64, count: Int) -> (UInt64, UInt64) {
    (low, high | UInt64(0xE0 | count) &<< 56)
  }

  /// Whether strings made the ordinary way have the bits `make` would give, checked
  /// once on samples of every length (bits only: no string is made from bits that
  /// might be wrong). When not, texts are made the ordinary way.
  @usableFromInline static let layoutHolds: Bool = {
    let letters = Array("abcdefghijklmno/".utf8)
    for count in 1..<16 {
      let sample = String(decoding: letters[..<count], as: UTF8.self)
      var words: (UInt64, UInt64) = (0, 0)
      withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: letters[..<count]) }
      let expected = bits(low: UInt64(littleEndian: words.0), high: UInt64(littleEndian: words.1), count: count)
      guard unsafeBitCast(sample, to: (UInt64, UInt64).self) == expected else { return false }
    }
    return true
  }()

  /// The bytes and count of `value` when it is a small ASCII string (the top nibble of
  /// its second word is small | ASCII | immortal, as the standard library's string
  /// object lays it out), with the count cleared from the second word; nil otherwise.
  @inlinable
  static func parts(of value: String, layoutHolds: Bool = layoutHolds) -> (low: UInt64, high: UInt64, count: Int)? {
    guard layoutHolds else { return nil }
    let (low, high) = unsafeBitCast(value, to: (UInt64, UInt64).self)
    guard high &>> 60 == 0xE else { return nil }
    return (low, high & 0x00FF_FFFF_FFFF_FFFF, Int(truncatingIfNeeded: (high &>> 56) & 0x0F))
  }
}
