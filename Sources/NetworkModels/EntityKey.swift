/// (kind, id): which object of the backend an entity is.
public struct EntityKey: Hashable, Sendable, CustomStringConvertible {
  public let kind: String
  public let id: String
  /// The strings' hash, taken once: the store asks its tables about one key many times
  /// (a backend read is ~15 lookups), and hashing two strings each time cost more than
  /// the rest of the lookup.
  private let hash: Int

  public init(kind: String, id: String) {
    self.kind = kind
    self.id = id
    var hasher = Hasher()
    hasher.combine(kind)
    hasher.combine(id)
    hash = hasher.finalize()
  }

  public static func == (lhs: EntityKey, rhs: EntityKey) -> Bool {
    lhs.hash == rhs.hash && lhs.kind == rhs.kind && lhs.id == rhs.id
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(hash)
  }

  /// What a `Dictionary` or `Set` asks for, without hashing the hash again: `hash` is
  /// already a keyed SipHash of the strings (the process's random seed), so mixing in
  /// the table's seed is enough. Each lookup of a key cost ~150 instructions more
  /// through `hash(into:)`, and a read that goes to the backend looks its key up ~15
  /// times.
  public func _rawHashValue(seed: Int) -> Int {
    hash ^ seed
  }

  public var description: String { "\(kind)/\(id)" }

  /// Why a kind or id is refused, or nil when both are valid: kind matches
  /// `^[a-z][a-z0-9_-]{0,63}$`, id is 1…256 bytes.
  public static func problem(kind: String, id: String) -> (field: String, reason: String)? {
    if !isValidKind(kind) { return ("kind", "kind must match ^[a-z][a-z0-9_-]{0,63}$") }
    let idBytes = id.utf8.count
    if idBytes == 0 || idBytes > 256 { return ("id", "id must be 1 to 256 bytes") }
    return nil
  }

  private static func isValidKind(_ kind: String) -> Bool {
    // Over the bytes in a buffer: walking a small string's UTF8View costs several
    // times as much a byte, and every request's key is checked.
    kind.utf8.withContiguousStorageIfAvailable(isValidKind) ?? Array(kind.utf8).withUnsafeBufferPointer(isValidKind)
  }

  private static func isValidKind(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard (1...64).contains(bytes.count), (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[0]) else {
      return false
    }
    for byte in bytes {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"),
        UInt8(ascii: "-"):
        continue
      default: return false
      }
    }
    return true
  }
}
