import JSON
import JSONRPC

/// Reads by-name params and reports the first bad field as `-32602` with `data.path`.
/// Absent params, `null`, `[]` and `{}` all read as "no params": real clients send each.
public struct Params {
  public let object: JSON?
  /// Where this object sits in the request's params, so nested objects (a topic in
  /// `topics`) report the full JSON Pointer.
  public let path: String

  public init(_ params: JSON?, path: String = "") throws(ResponseError) {
    self.path = path
    guard let params else {
      object = nil
      return
    }
    switch params.kind {
    case .object: object = params
    case .array where params.count == 0: object = nil
    default: throw .invalidParams(path.isEmpty ? "params must be an object (by-name)" : "must be an object", path: path)
    }
  }

  /// For methods that take none: anything but an empty value is refused, so a typo in a
  /// client is seen rather than silently ignored.
  public static func expectNone(_ params: JSON?) throws(ResponseError) {
    let read = try Params(params)
    if let object = read.object, object.count > 0 {
      let key = object.members.first!.key
      throw .invalidParams("unexpected param \(key); this method takes none", path: "/" + escapePointer(key))
    }
  }

  public func string(_ key: String) throws(ResponseError) -> String? {
    guard let value = object?[key], !value.isNull else { return nil }
    guard let string = value.string else { throw .invalidParams("\(key) must be a string", path: path + "/" + key) }
    return string
  }

  public func bool(_ key: String) throws(ResponseError) -> Bool? {
    guard let value = object?[key], !value.isNull else { return nil }
    guard let bool = value.bool else { throw .invalidParams("\(key) must be a boolean", path: path + "/" + key) }
    return bool
  }

  public func integer(_ key: String) throws(ResponseError) -> Int64? {
    guard let value = object?[key], !value.isNull else { return nil }
    guard let integer = value.integer else { throw .invalidParams("\(key) must be an integer", path: path + "/" + key) }
    return integer
  }

  public func object(_ key: String) throws(ResponseError) -> JSON? {
    guard let value = object?[key], !value.isNull else { return nil }
    guard value.isObject else { throw .invalidParams("\(key) must be an object", path: path + "/" + key) }
    return value
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
