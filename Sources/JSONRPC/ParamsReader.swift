import JSON

/// Reads by-name params and reports the first bad field as `-32602` with `data.path`.
/// Absent params, `null`, `[]` and `{}` all read as "no params": real clients send each.
///
/// A single request's params object is read from the scan of the frame's own bytes: no
/// copy and no tree. Such a reader points into those bytes and into the envelope the
/// dispatcher refills for each message, so it must not outlive the message: it is not
/// copyable, and the dispatcher lends it (`borrowing`) to `MethodParams.init(from:)`,
/// which can read it but neither keep nor copy it. It is made only with the message
/// (`IncomingMessage`, itself not copyable), which the dispatcher consumes while the
/// frame's bytes are at hand.
public struct ParamsReader: ~Copyable {
  private enum Source {
    case none
    case object(JSON)
    /// Params sent by position: refused by every read.
    case array(JSON)
    /// Its members are in `envelope`.
    case scanned(bytes: UnsafeRawBufferPointer)
  }

  private let source: Source
  /// The envelope whose params these are. The dispatcher owns it and refills it for
  /// each message, which a reader cannot outlive (see above): so neither retained nor
  /// released (an `unowned(unsafe)` one was retained at each read).
  private let scannedEnvelope: Unmanaged<JSONScanner.Envelope>?
  /// The envelope's generation when this reader was made.
  private let generation: UInt64

  /// The envelope, checked in debug builds to still hold this reader's message: a
  /// reader kept past its message would read the next one's params.
  @inline(__always)
  private var envelope: Unmanaged<JSONScanner.Envelope>? {
    assert(
      scannedEnvelope.map { $0.takeUnretainedValue().generation == generation } ?? true,
      "a ParamsReader was read after its message")
    return scannedEnvelope
  }
  /// Where this object sits in the request's params, so nested objects (a topic in
  /// `topics`) report the full JSON Pointer.
  public let path: String

  /// The members of a params object, scanned with `envelope` within `bytes` (ranges
  /// are relative to it).
  init(scannedWith envelope: JSONScanner.Envelope, in bytes: UnsafeRawBufferPointer) {
    source = .scanned(bytes: bytes)
    scannedEnvelope = Unmanaged.passUnretained(envelope)
    generation = envelope.generation
    path = ""
  }

  /// A request's params as a tree, or a nested object at `path`.
  public init(_ params: JSON?, path: String = "") {
    self.path = path
    scannedEnvelope = nil
    generation = 0
    guard let params else {
      source = .none
      return
    }
    switch params.kind {
    case .object: source = .object(params)
    case .array where params.count == 0, .null: source = .none
    default: source = .array(params)
    }
  }

  /// The params as a tree (nil when there are none), for a method that takes any value.
  public var tree: JSON? {
    switch source {
    case .none: return nil
    case .object(let value), .array(let value): return value
    case .scanned(let bytes):
      guard let range = envelope?.takeUnretainedValue().params?.range else { return nil }
      return try? JSON.parse(UnsafeRawBufferPointer(rebasing: bytes[range]))
    }
  }

  private func requireObject() throws(ResponseError) {
    guard case .array = source else { return }
    throw .invalidParams(path.isEmpty ? "params must be an object (by-name)" : "must be an object", path: path)
  }

  /// For methods that take none: anything but an empty value is refused, so a typo in a
  /// client is seen rather than silently ignored.
  public func expectNone() throws(ResponseError) {
    try requireObject()
    if let key = firstKey {
      throw .invalidParams(
        "unexpected param \(key); this method takes none", path: JSONPointer.member(key, of: ""))
    }
  }

  private var firstKey: String? {
    switch source {
    case .none, .array: return nil
    case .object(let object): return object.members.first?.key
    case .scanned: return envelope?.takeUnretainedValue().firstParamKey
    }
  }

  /// What a member holds, without building more than it must.
  private enum Found {
    case absent
    case string(String)
    case bool(Bool)
    case integer(Int64)
    case other(JSONScanner.Kind, Range<Int>)
    case tree(JSON)
  }

  private func find(_ key: JSONScanner.Key) throws(ResponseError) -> Found {
    switch source {
    case .none:
      return .absent
    case .array:
      try requireObject()
      return .absent
    case .object(let object):
      guard let value = object[key.name], !value.isNull else { return .absent }
      if let string = value.string { return .string(string) }
      if let bool = value.bool { return .bool(bool) }
      if let integer = value.integer { return .integer(integer) }
      return .tree(value)
    case .scanned:
      guard let envelope, envelope.withGuaranteedReference({ $0.mayHaveParam(key) }) else { return .absent }
      switch envelope.withGuaranteedReference({ $0.paramValue(key) }) {
      case .absent: return .absent
      case .string(let value): return .string(value)
      case .bool(let value): return .bool(value)
      case .integer(let value): return .integer(value)
      case .other(let kind, let range): return .other(kind, range)
      }
    }
  }

  /// True when the scanned params surely have no member named `key` (most optional
  /// params are not sent): checked before the call of `find`.
  @inline(__always)
  private func isSurelyAbsent(_ key: JSONScanner.Key) -> Bool {
    guard case .scanned = source, let envelope else { return false }
    return !envelope.withGuaranteedReference { $0.mayHaveParam(key) }
  }

  /// The tree of a value found as `.other`; only asked for objects, arrays and reals.
  private func build(_ range: Range<Int>) -> JSON? {
    guard case .scanned(let bytes) = source else { return nil }
    return try? JSON.parse(UnsafeRawBufferPointer(rebasing: bytes[range]))
  }

  public func string(_ key: JSONScanner.Key) throws(ResponseError) -> String? {
    switch try find(key) {
    case .absent: return nil
    case .string(let value): return value
    default: throw .invalidParams("\(key.name) must be a string", path: path + "/" + key.name)
    }
  }

  public func bool(_ key: JSONScanner.Key) throws(ResponseError) -> Bool? {
    if isSurelyAbsent(key) { return nil }
    switch try find(key) {
    case .absent: return nil
    case .bool(let value): return value
    default: throw .invalidParams("\(key.name) must be a boolean", path: path + "/" + key.name)
    }
  }

  public func integer(_ key: JSONScanner.Key) throws(ResponseError) -> Int64? {
    if isSurelyAbsent(key) { return nil }
    switch try find(key) {
    case .absent: return nil
    case .integer(let value): return value
    default: throw .invalidParams("\(key.name) must be an integer", path: path + "/" + key.name)
    }
  }

  public func object(_ key: JSONScanner.Key) throws(ResponseError) -> JSON? {
    switch try find(key) {
    case .absent: return nil
    case .other(.object, let range): return build(range)
    case .tree(let value) where value.isObject: return value
    default: throw .invalidParams("\(key.name) must be an object", path: path + "/" + key.name)
    }
  }

  /// Any value, as a tree; nil when absent or `null`.
  public func value(_ key: JSONScanner.Key) throws(ResponseError) -> JSON? {
    switch try find(key) {
    case .absent: return nil
    case .string(let value): return .string(value)
    case .bool(let value): return .bool(value)
    case .integer(let value): return .integer(value)
    case .other(_, let range): return build(range)
    case .tree(let value): return value
    }
  }

  /// True when the member is present, `null` included.
  public func contains(_ key: JSONScanner.Key) -> Bool {
    switch source {
    case .none, .array: return false
    case .object(let object): return object[key.name] != nil
    case .scanned: return envelope?.takeUnretainedValue().paramEntry(key) != nil
    }
  }
}
