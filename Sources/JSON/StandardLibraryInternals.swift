/// Every reliance of netmodel on what the standard library does not promise, in one
/// file. The fast path takes them where the plain way costs much more for each request
/// (bench/README.md, "Instructions per request", gives the figures). Each has a test in
/// `Tests/JSONTests/StandardLibraryInternalsTests.swift` that fails when a toolchain
/// changes what it relies on, and a plain fallback:
///
/// 1. The small-string layout (`SmallASCIIString`): a request's short ASCII texts are
///    made from their packed bytes and read back as two words. Checked once at start
///    (`layoutHolds`, on samples of every length); when it fails, strings are made with
///    `String(unsafeUninitializedCapacity:)` and read through their UTF-8 view.
/// 2. A `String` is its two words (`String.hasSameRepresentation`): equal words are one
///    value, so the same bytes. Taken only when `MemoryLayout<String>` is two words
///    (known at compile time); otherwise the bytes are compared.
/// 3. `Hashable._rawHashValue(seed:)` (`SeededHashable`): a table asks a key that holds
///    its hash for that hash with the table's seed, without `Hasher`. When a toolchain
///    stops asking for it, tables call `hash(into:)`, which a `SeededHashable` must
///    feed the same hash (the fallback needs no check: it is what `Hashable` does).
/// 4. `Unmanaged._withUnsafeGuaranteedRef` (`Unmanaged.withGuaranteedReference`): the
///    object behind an unretained reference, lent without a retain and a release. Its
///    fallback, `takeUnretainedValue()`, is one line in that function.
public enum StandardLibraryInternals {
  /// Whether the small-string layout is the one `SmallASCIIString` assumes (1).
  public static var smallStringLayoutHolds: Bool { SmallASCIIString.layoutHolds }
}

// MARK: 1. The small-string layout

/// A short ASCII text made as the standard library lays out a small string (its bytes
/// in two words, the count and flags in the top byte): a request's kind and id are such
/// texts, and `String(unsafeUninitializedCapacity:)` validates the UTF-8 it is given.
/// Used only when `layoutHolds`.
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
    guard String.isTwoWords else { return false }
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

// MARK: 2. A string is its two words

extension String {
  /// Whether a `String` is two 64-bit words: a constant the compiler folds.
  @inlinable static var isTwoWords: Bool {
    MemoryLayout<String>.size == 16 && MemoryLayout<(UInt64, UInt64)>.size == 16
  }

  /// True when the two are surely the same bytes, false when they surely differ, nil
  /// when only their bytes can tell: equal words are one representation (a small
  /// string's bytes, or one shared storage: a key looked up with its own text), and two
  /// small ASCII strings hold their bytes in their words.
  @inlinable func hasSameRepresentation(as other: String) -> Bool? {
    guard String.isTwoWords else { return nil }
    let mine = unsafeBitCast(self, to: (UInt64, UInt64).self)
    let theirs = unsafeBitCast(other, to: (UInt64, UInt64).self)
    if mine == theirs { return true }
    if SmallASCIIString.layoutHolds, mine.1 &>> 60 == 0xE, theirs.1 &>> 60 == 0xE { return false }
    return nil
  }
}

// MARK: 3. Hashable._rawHashValue(seed:)

/// A key that holds its hash, already keyed with the process's random seeds: a table
/// mixes in its own seed instead of hashing the hash again through `Hasher`.
/// `hash(into:)` must combine `seededHashBase` and nothing else, so that the fallback
/// (a toolchain that no longer asks for `_rawHashValue(seed:)`) hashes the same value.
public protocol SeededHashable: Hashable {
  var seededHashBase: Int { get }
}

extension SeededHashable {
  /// The standard library's customization point for `Dictionary` and `Set` (an
  /// underscored requirement of `Hashable`); this default is its witness for every
  /// `SeededHashable`.
  @inlinable public func _rawHashValue(seed: Int) -> Int {
    seededHashBase ^ seed
  }
}

// MARK: 4. Unmanaged._withUnsafeGuaranteedRef

extension Unmanaged {
  /// `body` with the object, which the caller guarantees alive, neither retained nor
  /// released around the call (`takeUnretainedValue()` does both).
  @inlinable @inline(__always)
  public func withGuaranteedReference<Result>(_ body: (Instance) -> Result) -> Result {
    _withUnsafeGuaranteedRef(body)
  }
}
