/// A `String` equal to another only when their UTF-8 bytes are, and hashed by them.
///
/// `String`'s own `==`, `<` and hash follow Unicode canonical equivalence:
/// `"caf\u{E9}" == "cafe\u{301}"`, and even `"\u{212A}" == "K"` (the Kelvin sign).
/// The APIs behind ids and list params compare bytes, so two values a client keeps
/// apart must stay apart here: every table or comparison over text from outside
/// (ids, list params, request ids) goes through this type or `String.hasSameBytes`.
public struct ExactString: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let string: String

  @inlinable public init(_ string: String) { self.string = string }

  @inlinable public static func == (lhs: ExactString, rhs: ExactString) -> Bool {
    lhs.string.hasSameBytes(as: rhs.string)
  }

  @inlinable public static func < (lhs: ExactString, rhs: ExactString) -> Bool {
    lhs.string.precedesByBytes(rhs.string)
  }

  public func hash(into hasher: inout Hasher) {
    string.withUTF8Buffer { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    // The length ends the bytes, so that ("ab", "c") and ("a", "bc") hash apart when
    // combined in one hasher.
    hasher.combine(string.utf8.count)
  }

  public var description: String { string }
}

extension String {
  /// Whether the two have the same UTF-8 bytes (not `==`: see `ExactString`).
  @inlinable public func hasSameBytes(as other: String) -> Bool {
    // Most often told by the two words alone (see StandardLibraryInternals.swift).
    if let same = hasSameRepresentation(as: other) { return same }
    return hasSameBytesInBuffers(as: other)
  }

  @usableFromInline func hasSameBytesInBuffers(as other: String) -> Bool {
    let count = utf8.count
    guard count == other.utf8.count else { return false }
    return withUTF8Buffer { mine in
      other.withUTF8Buffer { theirs in
        // Small texts (ids are mostly under 32 bytes): a loop beats a call.
        for index in 0..<count where mine[index] != theirs[index] { return false }
        return true
      }
    }
  }

  /// Byte order, as `memcmp` and most APIs sort (not `<`: see `ExactString`).
  @inlinable public func precedesByBytes(_ other: String) -> Bool {
    utf8.lexicographicallyPrecedes(other.utf8)
  }

  /// Whether `part`'s bytes stand anywhere in these bytes. `String.contains` matches
  /// whole characters: `"a,\u{301}b".contains(",")` is false, yet the bytes of `,` are
  /// there and a server splitting on them sees two ids.
  public func containsBytes(of part: String) -> Bool {
    let needle = Array(part.utf8)
    guard let first = needle.first else { return true }
    return withUTF8Buffer { hay in
      guard hay.count >= needle.count else { return false }
      for start in 0...(hay.count - needle.count) where hay[start] == first {
        var index = 1
        while index < needle.count && hay[start + index] == needle[index] { index += 1 }
        if index == needle.count { return true }
      }
      return false
    }
  }

  /// The UTF-8 bytes in a buffer, without copying a native string's storage (a small
  /// string's are lent from the stack).
  @inlinable func withUTF8Buffer<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
    var copy = self
    return copy.withUTF8(body)
  }
}
