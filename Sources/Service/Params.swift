import JSON
import JSONRPC

/// Reads by-name params and reports the first bad field as `-32602` with `data.path`.
/// Absent params, `null`, `[]` and `{}` all read as "no params": real clients send each.
public struct Params {
  private enum Source {
    case none
    case object(JSON)
    case scanned(JSONScanner.ScannedObject, bytes: [UInt8])
  }

  private let source: Source
  /// Where this object sits in the request's params, so nested objects (a topic in
  /// `topics`) report the full JSON Pointer.
  public let path: String

  /// A request's params; scanned params are read without building a tree.
  public init(_ request: Request) throws(ResponseError) {
    path = ""
    switch request.rawParams {
    case .none: source = .none
    case .scanned(let members, let bytes): source = .scanned(members, bytes: bytes)
    case .json(let value): source = try Params.source(of: value, path: "")
    }
  }

  /// A nested object (or a request's params given as a tree).
  public init(_ params: JSON?, path: String = "") throws(ResponseError) {
    self.path = path
    source = try params.map { (value) throws(ResponseError) in try Params.source(of: value, path: path) } ?? .none
  }

  private static func source(of value: JSON, path: String) throws(ResponseError) -> Source {
    switch value.kind {
    case .object: return .object(value)
    case .array where value.count == 0: return .none
    default:
      throw .invalidParams(path.isEmpty ? "params must be an object (by-name)" : "must be an object", path: path)
    }
  }

  /// For methods that take none: anything but an empty value is refused, so a typo in a
  /// client is seen rather than silently ignored.
  public static func expectNone(_ request: Request) throws(ResponseError) {
    let read = try Params(request)
    if let key = read.firstKey {
      throw .invalidParams("unexpected param \(key); this method takes none", path: "/" + escapePointer(key))
    }
  }

  private var firstKey: String? {
    switch source {
    case .none: return nil
    case .object(let object): return object.members.first?.key
    case .scanned(let members, _): return members.members.first?.key
    }
  }

  /// What a member holds, without building more than it must.
  private enum Found {
    case absent
    case string(String)
    case bool(Bool)
    case integer(Int64)
    case other(() -> JSON?, isObject: Bool)
  }

  private func find(_ key: String) -> Found {
    switch source {
    case .none:
      return .absent
    case .object(let object):
      guard let value = object[key], !value.isNull else { return .absent }
      if let string = value.string { return .string(string) }
      if let bool = value.bool { return .bool(bool) }
      if let integer = value.integer { return .integer(integer) }
      return .other({ value }, isObject: value.isObject)
    case .scanned(let members, let bytes):
      guard let member = members[key], member.kind != .null else { return .absent }
      switch member.kind {
      case .string: return .string(member.stringValue ?? "")
      case .true: return .bool(true)
      case .false: return .bool(false)
      case .integer: return .integer(member.integerValue ?? 0)
      default:
        let range = member.range
        return .other(
          { bytes.withUnsafeBytes { try? JSON.parse(UnsafeRawBufferPointer(rebasing: $0[range])) } },
          isObject: member.kind == .object)
      }
    }
  }

  public func string(_ key: String) throws(ResponseError) -> String? {
    switch find(key) {
    case .absent: return nil
    case .string(let value): return value
    default: throw .invalidParams("\(key) must be a string", path: path + "/" + key)
    }
  }

  public func bool(_ key: String) throws(ResponseError) -> Bool? {
    switch find(key) {
    case .absent: return nil
    case .bool(let value): return value
    default: throw .invalidParams("\(key) must be a boolean", path: path + "/" + key)
    }
  }

  public func integer(_ key: String) throws(ResponseError) -> Int64? {
    switch find(key) {
    case .absent: return nil
    case .integer(let value): return value
    default: throw .invalidParams("\(key) must be an integer", path: path + "/" + key)
    }
  }

  public func object(_ key: String) throws(ResponseError) -> JSON? {
    switch find(key) {
    case .absent: return nil
    case .other(let build, isObject: true): return build()
    default: throw .invalidParams("\(key) must be an object", path: path + "/" + key)
    }
  }

  /// Any value, as a tree; nil when absent or `null`.
  public func value(_ key: String) -> JSON? {
    switch find(key) {
    case .absent: return nil
    case .string(let value): return .string(value)
    case .bool(let value): return .bool(value)
    case .integer(let value): return .integer(value)
    case .other(let build, _): return build()
    }
  }

  /// True when the member is present, `null` included.
  public func contains(_ key: String) -> Bool {
    switch source {
    case .none: return false
    case .object(let object): return object[key] != nil
    case .scanned(let members, _): return members[key] != nil
    }
  }

  /// RFC 6901: `~` → `~0`, `/` → `~1`.
  static func escapePointer(_ key: String) -> String {
    key.replacingTildeAndSlash()
  }
}

extension String {
  fileprivate func replacingTildeAndSlash() -> String {
    var result = ""
    for character in self {
      switch character {
      case "~": result += "~0"
      case "/": result += "~1"
      default: result.append(character)
      }
    }
    return result
  }
}
