import JSON

/// A request's params as the dispatcher found them: absent, a jansson tree, or — for
/// an object sent in a single request, the common case — a scan of its members that
/// answers flat reads (`kind`, `id`, `await`) without building a tree.
public enum RequestParams {
  case none
  case json(JSON)
  /// The members of a params object and its bytes (member ranges index into them).
  case scanned(JSONScanner.ScannedObject, bytes: [UInt8])

  /// The params as a tree; built on demand from scanned bytes.
  public var json: JSON? {
    switch self {
    case .none: return nil
    case .json(let value): return value
    case .scanned(_, let bytes): return try? JSON.parse(bytes)
    }
  }
}
