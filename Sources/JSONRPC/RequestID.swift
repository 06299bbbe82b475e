import JSON

/// A request's id, kept in the type it was sent as so replies echo it exactly.
public enum RequestID: Hashable, Sendable, CustomStringConvertible {
  case integer(Int64)
  case string(String)
  /// Allowed by JSON-RPC 2.0 though discouraged; echoed as jansson prints it.
  case real(Double)
  case null

  /// nil when the value is not a valid id (an object, array or boolean).
  public init?(_ json: JSON) {
    switch json.kind {
    case .integer: self = .integer(json.integer!)
    case .string: self = .string(json.string!)
    case .real: self = .real(json.real!)
    case .null: self = .null
    default: return nil
    }
  }

  public func encode(into buffer: inout [UInt8]) {
    switch self {
    case .integer(let value): appendDecimal(value, to: &buffer)
    case .string(let value): appendJSONString(value, to: &buffer)
    case .real(let value): JSON.real(value).encode(into: &buffer)
    case .null: buffer.append(contentsOf: [110, 117, 108, 108])
    }
  }

  public var json: JSON {
    switch self {
    case .integer(let value): return .integer(value)
    case .string(let value): return .string(value)
    case .real(let value): return .real(value)
    case .null: return .null()
    }
  }

  /// A string id by its bytes (`ExactString`): a peer that numbers its requests
  /// `caf\u{E9}` and `cafe\u{301}` must be answered, and cancelled, as two.
  public static func == (lhs: RequestID, rhs: RequestID) -> Bool {
    switch (lhs, rhs) {
    case (.integer(let a), .integer(let b)): return a == b
    case (.string(let a), .string(let b)): return a.hasSameBytes(as: b)
    case (.real(let a), .real(let b)): return a == b
    case (.null, .null): return true
    default: return false
    }
  }

  public func hash(into hasher: inout Hasher) {
    switch self {
    case .integer(let value): hasher.combine(0 as UInt8); hasher.combine(value)
    case .string(let value): hasher.combine(1 as UInt8); hasher.combine(ExactString(value))
    case .real(let value): hasher.combine(2 as UInt8); hasher.combine(value)
    case .null: hasher.combine(3 as UInt8)
    }
  }

  public var description: String {
    var buffer: [UInt8] = []
    encode(into: &buffer)
    return String(decoding: buffer, as: UTF8.self)
  }
}
