import CJansson

/// Why text could not be parsed, with where (1-based line and column, 0-based byte).
public struct JSONError: Error, CustomStringConvertible, Sendable {
  public let message: String
  public let line: Int
  public let column: Int
  public let position: Int

  public var description: String {
    "\(message) at line \(line), column \(column) (byte \(position))"
  }
}

/// One owning reference to a jansson value (`json_t*`): it holds one reference count
/// and gives it back in `deinit`, so no value leaks and none is freed twice (Watchman's
/// `json_ref`). Values are mutable in place; share them only on the loop's thread.
public final class JSON {
  public enum Kind: Equatable, Sendable {
    case object, array, string, integer, real, bool, null

    /// The kind of a jansson value (for `JSON` and `JSONView`).
    init(of value: UnsafeMutablePointer<json_t>) {
      switch nm_json_typeof(value) {
      case Int32(JSON_OBJECT.rawValue): self = .object
      case Int32(JSON_ARRAY.rawValue): self = .array
      case Int32(JSON_STRING.rawValue): self = .string
      case Int32(JSON_INTEGER.rawValue): self = .integer
      case Int32(JSON_REAL.rawValue): self = .real
      case Int32(JSON_TRUE.rawValue), Int32(JSON_FALSE.rawValue): self = .bool
      default: self = .null
      }
    }
  }

  public let raw: UnsafeMutablePointer<json_t>

  /// Takes over one reference the caller already holds ("steal").
  public init(owning raw: UnsafeMutablePointer<json_t>) { self.raw = raw }

  /// Adds a reference of its own to a value borrowed from another.
  public init(retaining raw: UnsafeMutablePointer<json_t>) {
    self.raw = json_incref(raw)
  }

  deinit { json_decref(raw) }

  // MARK: Parsing

  /// Parses one JSON text. Any JSON value is accepted at the top level.
  /// `rejectingDuplicateKeys`: an object that names a key twice is an error (a file a
  /// person writes, where the second would silently win), not the last one kept.
  public static func parse(
    _ bytes: UnsafeRawBufferPointer, rejectingDuplicateKeys: Bool = false
  ) throws(JSONError) -> JSON {
    var error = json_error_t()
    let flags = Int(JSON_DECODE_ANY | JSON_ALLOW_NUL | (rejectingDuplicateKeys ? JSON_REJECT_DUPLICATES : 0))
    guard
      let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
      let value = json_loadb(base, bytes.count, flags, &error)
    else {
      if bytes.isEmpty {
        throw JSONError(message: "empty message", line: 1, column: 1, position: 0)
      }
      let message = withUnsafeBytes(of: &error.text) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
      throw JSONError(
        message: message, line: Int(error.line), column: Int(error.column), position: Int(error.position))
    }
    return JSON(owning: value)
  }

  public static func parse(_ bytes: [UInt8], rejectingDuplicateKeys: Bool = false) throws(JSONError) -> JSON {
    let result = bytes.withUnsafeBytes { buffer in
      Result { () throws(JSONError) in try parse(buffer, rejectingDuplicateKeys: rejectingDuplicateKeys) }
    }
    return try result.get()
  }

  public static func parse(_ text: String) throws(JSONError) -> JSON {
    try parse(Array(text.utf8))
  }

  // MARK: Reading

  public var kind: Kind { Kind(of: raw) }

  public var isObject: Bool { kind == .object }
  public var isArray: Bool { kind == .array }
  public var isNull: Bool { kind == .null }

  /// The member named `key` of an object; nil when absent or when this is no object.
  public subscript(key: String) -> JSON? {
    // withCString lends a native string's bytes; passing `key` as a C string argument
    // would copy it into a new array (an allocation per lookup).
    guard let member = key.withCString({ json_object_get(raw, $0) }) else { return nil }
    return JSON(retaining: member)
  }

  /// The number of elements of an array or members of an object.
  public var count: Int {
    switch kind {
    case .array: return json_array_size(raw)
    case .object: return json_object_size(raw)
    default: return 0
    }
  }

  public subscript(index: Int) -> JSON? {
    guard let element = json_array_get(raw, index) else { return nil }
    return JSON(retaining: element)
  }

  public var elements: [JSON] {
    (0..<json_array_size(raw)).map { JSON(retaining: json_array_get(raw, $0)!) }
  }

  /// The members of an object, in jansson's insertion order.
  public var members: [(key: String, value: JSON)] {
    var result: [(String, JSON)] = []
    var iterator = json_object_iter(raw)
    while let it = iterator {
      let key = String(cString: json_object_iter_key(it))
      result.append((key, JSON(retaining: json_object_iter_value(it))))
      iterator = json_object_iter_next(raw, it)
    }
    return result
  }

  public var string: String? { JSONView(raw).string }

  public var integer: Int64? { kind == .integer ? json_integer_value(raw) : nil }
  public var real: Double? { kind == .real ? json_real_value(raw) : nil }
  /// Integers and reals alike.
  public var number: Double? {
    switch kind {
    case .integer: return Double(json_integer_value(raw))
    case .real: return json_real_value(raw)
    default: return nil
    }
  }
  public var bool: Bool? {
    let type = nm_json_typeof(raw)
    if type == Int32(JSON_TRUE.rawValue) { return true }
    if type == Int32(JSON_FALSE.rawValue) { return false }
    return nil
  }

  // MARK: Building

  public static func object() -> JSON { JSON(owning: json_object()) }
  public static func array() -> JSON { JSON(owning: json_array()) }
  public static func null() -> JSON { JSON(owning: json_null()) }
  public static func bool(_ value: Bool) -> JSON { JSON(owning: value ? json_true() : json_false()) }
  public static func integer(_ value: Int64) -> JSON { JSON(owning: json_integer(value)) }
  public static func integer(_ value: Int) -> JSON { JSON(owning: json_integer(Int64(value))) }
  public static func real(_ value: Double) -> JSON { JSON(owning: json_real(value)) }
  public static func string(_ value: String) -> JSON {
    var copy = value
    return copy.withUTF8 { buffer in
      buffer.withMemoryRebound(to: CChar.self) {
        JSON(owning: json_stringn_nocheck($0.baseAddress, $0.count))
      }
    }
  }

  /// Sets `key` on an object. Returns self, so objects can be built in one expression.
  @discardableResult
  public func set(_ key: String, _ value: JSON) -> JSON {
    // Not `json_object_set(raw, key, …)`: that copies `key` into a new array first,
    // an allocation per member (a fifth of FuzzDispatch's, its error data; Fuzz/README.md).
    _ = key.withCString { json_object_set(raw, $0, value.raw) }
    return self
  }

  @discardableResult
  public func append(_ value: JSON) -> JSON {
    json_array_append(raw, value.raw)
    return self
  }

  public static func == (lhs: JSON, rhs: JSON) -> Bool { json_equal(lhs.raw, rhs.raw) == 1 }
}

// jansson's reference counts are atomic, and every value is built and changed on the
// event loop's thread only; errors that carry a `JSON` (`data`) must be `Sendable`.
extension JSON: @unchecked Sendable {}
