/// A JSON Pointer (RFC 6901): `""` is the whole document, `/items/0/id` walks down
/// object members and array indexes; `~1` stands for `/` and `~0` for `~`.
public struct JSONPointer: Sendable, Equatable, CustomStringConvertible {
  public let tokens: [String]
  public let description: String

  /// nil when `text` is neither empty nor starts with `/`, or has a `~` not followed
  /// by 0 or 1.
  public init?(_ text: String) {
    description = text
    guard !text.isEmpty else {
      tokens = []
      return
    }
    // Scalars, not Characters: a "/" followed by a combining mark is still a "/".
    guard text.unicodeScalars.first == "/" else { return nil }
    var result: [String] = []
    for raw in text.unicodeScalars.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
      var token = ""
      var scalars = raw.makeIterator()
      while let scalar = scalars.next() {
        guard scalar == "~" else {
          token.unicodeScalars.append(scalar)
          continue
        }
        switch scalars.next() {
        case "0": token += "~"
        case "1": token += "/"
        default: return nil
        }
      }
      result.append(token)
    }
    tokens = result
  }

  public static let root = JSONPointer("")!

  /// `name` as one reference token: `~` → `~0`, `/` → `~1` (RFC 6901 §3). The one
  /// escaper of the tree: every error path that names a member goes through it.
  public static func token(_ name: String) -> String {
    guard name.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return name }
    var result = ""
    result.unicodeScalars.reserveCapacity(name.unicodeScalars.count + 2)
    // Scalars, not Characters: a "/" followed by a combining mark is still a "/".
    for scalar in name.unicodeScalars {
      switch scalar {
      case "~": result += "~0"
      case "/": result += "~1"
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result
  }

  /// `parent` with member `name` appended.
  public static func member(_ name: String, of parent: String) -> String { parent + "/" + token(name) }
}

extension JSON {
  /// The value `pointer` names, or nil when a member or index along it is missing.
  public func value(at pointer: JSONPointer) -> JSON? {
    var current = self
    for token in pointer.tokens {
      switch current.kind {
      case .object:
        guard let next = current[token] else { return nil }
        current = next
      case .array:
        // RFC 6901: digits without leading zeros ("-" is past the end: missing).
        guard let index = Int(token), index >= 0, token == String(index), let next = current[index] else {
          return nil
        }
        current = next
      default:
        return nil
      }
    }
    return current
  }
}
