import JSON

/// (kind, id): which object of the backend an entity is.
public struct EntityKey: SeededHashable, Comparable, Sendable, CustomStringConvertible {
  public let kind: String
  public let id: String
  /// The strings' hash, taken once: the store asks its tables about one key many times
  /// (a backend read is ~15 lookups), and hashing two strings each time cost more than
  /// the rest of the lookup.
  private let hash: Int

  public init(kind: String, id: String) {
    self.kind = kind
    self.id = id
    // The seeds read once (each read of the static checks that it was made).
    let seeds = KeyHash.seeds
    hash = Int(truncatingIfNeeded: KeyHash.of(id, after: KeyHash.of(kind, after: seeds.start, seeds), seeds))
  }

  /// By bytes, as the hash is: the API behind an id tells `caf\u{E9}` and
  /// `cafe\u{301}` apart, and `String ==` would not (`ExactString`).
  public static func == (lhs: EntityKey, rhs: EntityKey) -> Bool {
    lhs.hash == rhs.hash && lhs.kind.hasSameBytes(as: rhs.kind) && lhs.id.hasSameBytes(as: rhs.id)
  }

  /// Kind, then id, each in byte order: the order files and requests list keys in.
  public static func < (lhs: EntityKey, rhs: EntityKey) -> Bool {
    lhs.kind.hasSameBytes(as: rhs.kind) ? lhs.id.precedesByBytes(rhs.id) : lhs.kind.precedesByBytes(rhs.kind)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(hash)
  }

  /// What a `Dictionary` or `Set` mixes its seed into (`SeededHashable`), without
  /// hashing the hash again: `hash` is already keyed with the process's random seeds
  /// (`KeyHash`), and a read that goes to the backend looks its key up ~15 times.
  public var seededHashBase: Int { hash }

  public var description: String { "\(kind)/\(id)" }

  /// Why a kind or id is refused, or nil when both are valid: kind matches
  /// `^[a-z][a-z0-9_-]{0,63}$`, id is 1…256 bytes.
  public static func problem(kind: String, id: String) -> (field: String, reason: String)? {
    if !isValidKind(kind) { return ("kind", "kind must match ^[a-z][a-z0-9_-]{0,63}$") }
    let idBytes = id.utf8.count
    if idBytes == 0 || idBytes > 256 { return ("id", "id must be 1 to 256 bytes") }
    return nil
  }

  static func isValidKind(_ kind: String) -> Bool {
    // Over the bytes in a buffer: walking a small string's UTF8View costs several
    // times as much a byte, and every request's key is checked.
    kind.utf8.withContiguousStorageIfAvailable(isValidKind) ?? Array(kind.utf8).withUnsafeBufferPointer(isValidKind)
  }

  private static func isValidKind(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard (1...64).contains(bytes.count), (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[0]) else {
      return false
    }
    // One bit per ASCII byte that a kind may hold: a test a byte instead of four ranges.
    var allowed = true
    for byte in bytes {
      let word = byte < 64 ? kindBytesBelow64 : byte < 128 ? kindBytesFrom64 : 0
      allowed = allowed && (word &>> UInt64(byte & 63)) & 1 != 0
    }
    return allowed
  }

  /// `0-9` and `-` (bytes below 64); `a-z` and `_` (64 to 127). `EntityKeyTests` checks
  /// them against the pattern.
  private static let kindBytesBelow64: UInt64 = 0x03FF_2000_0000_0000
  private static let kindBytesFrom64: UInt64 = 0x07FF_FFFE_8000_0000
}

/// The hash of an entity key: a folded multiply over its strings' bytes, 16 at a time,
/// keyed with seeds drawn at random once per process (the idea of foldhash and
/// ahash). Keys come from clients, so the hash must not be predictable (no flooding a
/// table with colliding keys); SipHash, which `Hasher` uses, cost more a key than the
/// rest of a cached read's lookup.
enum KeyHash {
  typealias Seeds = (start: UInt64, chunk: UInt64, length: UInt64)

  static let seeds: Seeds = {
    var generator = SystemRandomNumberGenerator()
    return (generator.next(), generator.next() | 1, generator.next() | 1)
  }()

  /// `state` with `text` mixed in.
  @inline(__always)
  static func of(_ text: String, after state: UInt64, _ seeds: Seeds = seeds) -> UInt64 {
    if let hash = text.utf8.withContiguousStorageIfAvailable({ of($0, after: state, seeds) }) { return hash }
    var copy = text
    return copy.withUTF8 { of($0, after: state, seeds) }
  }

  static func of(_ bytes: UnsafeBufferPointer<UInt8>, after state: UInt64, _ seeds: Seeds = seeds) -> UInt64 {
    var state = state
    var offset = 0
    let count = bytes.count
    if let base = bytes.baseAddress {
      let raw = UnsafeRawPointer(base)
      while count - offset >= 16 {
        let low = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        let high = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
        state = fold(low ^ seeds.chunk, high ^ state)
        offset += 16
      }
      // The last 0 to 15 bytes in two words, from loads that may overlap (as wyhash
      // reads them): a copy into zeroed words called `memcpy`. Equal texts load alike,
      // and the length is mixed in below.
      let rest = count - offset
      var low: UInt64 = 0
      var high: UInt64 = 0
      if rest >= 8 {
        low = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        high = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
      } else if rest >= 4 {
        low =
          UInt64(raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
          | UInt64(raw.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)) &<< 32
      } else if rest > 0 {
        low =
          UInt64(base[offset]) | UInt64(base[offset + rest / 2]) &<< 8 | UInt64(base[count - 1]) &<< 16
      }
      state = fold(UInt64(littleEndian: low) ^ seeds.chunk, UInt64(littleEndian: high) ^ state)
    }
    // The length ends the text, so "ab" + "c" and "a" + "bc" differ.
    return fold(state ^ UInt64(count), seeds.length)
  }

  /// The high and low halves of the full product, xored.
  @inline(__always)
  static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let product = a.multipliedFullWidth(by: b)
    return product.high ^ product.low
  }
}
