import CJansson

/// A value inside a `JSON` tree, borrowed: reading it takes no reference count and
/// allocates nothing. For reading a large tree field by field (a REST configuration
/// file), where a `JSON` per lookup cost an allocation and two atomic operations.
///
/// Valid only while the `JSON` that owns the tree lives and is not changed: keep the
/// owner alive across every use (`withExtendedLifetime`), and take `owned` to keep a
/// value beyond it.
public struct JSONView {
  public let raw: UnsafeMutablePointer<json_t>

  public init(_ raw: UnsafeMutablePointer<json_t>) { self.raw = raw }

  /// An owning reference to the same value.
  public var owned: JSON { JSON(retaining: raw) }

  public var kind: JSON.Kind { JSON.Kind(of: raw) }

  public var isObject: Bool { kind == .object }
  public var isArray: Bool { kind == .array }

  /// The member named `key` of an object; nil when absent or when this is no object.
  /// (Looked up by the key's bytes: passing a short `String` as a C string would copy
  /// it to the heap.)
  public subscript(key: String) -> JSONView? {
    var key = key
    return key.withUTF8 { bytes in
      bytes.withMemoryRebound(to: CChar.self) { json_object_getn(raw, $0.baseAddress, $0.count) }
    }.map(JSONView.init)
  }

  /// The number of elements of an array or members of an object.
  public var count: Int {
    switch kind {
    case .array: return json_array_size(raw)
    case .object: return json_object_size(raw)
    default: return 0
    }
  }

  public subscript(index: Int) -> JSONView? { json_array_get(raw, index).map(JSONView.init) }

  /// The elements of an array, in order (none when this is no array).
  public var elements: LazyMapSequence<Range<Int>, JSONView> {
    (0..<(isArray ? json_array_size(raw) : 0)).lazy.map { [raw] in JSONView(json_array_get(raw, $0)!) }
  }

  /// The members of an object in jansson's insertion order, keys as `JSON.members`
  /// gives them (up to a NUL); none when this is no object.
  public var members: Members { Members(object: raw) }

  public struct Members: Sequence, IteratorProtocol {
    let object: UnsafeMutablePointer<json_t>
    var iterator: UnsafeMutableRawPointer?

    init(object: UnsafeMutablePointer<json_t>) {
      self.object = object
      iterator = json_object_iter(object)
    }

    public mutating func next() -> (key: String, value: JSONView)? {
      guard let it = iterator else { return nil }
      iterator = json_object_iter_next(object, it)
      return (String(cString: json_object_iter_key(it)), JSONView(json_object_iter_value(it)))
    }
  }

  public var string: String? {
    guard kind == .string, let chars = json_string_value(raw) else { return nil }
    let length = json_string_length(raw)
    return chars.withMemoryRebound(to: UInt8.self, capacity: length) {
      String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
  }

  public var integer: Int64? { kind == .integer ? json_integer_value(raw) : nil }

  public var bool: Bool? {
    let type = nm_json_typeof(raw)
    if type == Int32(JSON_TRUE.rawValue) { return true }
    if type == Int32(JSON_FALSE.rawValue) { return false }
    return nil
  }
}

extension JSON {
  /// This value, borrowed (see `JSONView`).
  public var view: JSONView { JSONView(raw) }
}
