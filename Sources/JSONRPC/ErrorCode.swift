/// A JSON-RPC error code: JSON-RPC's own (and LSP's `-32800`) here; a struct, not an
/// enum, so the layers above define their application codes where they belong.
public struct ErrorCode: RawRepresentable, Hashable, Sendable {
  public let rawValue: Int64
  public init(rawValue: Int64) { self.rawValue = rawValue }

  public static let parseError = ErrorCode(rawValue: -32700)
  public static let invalidRequest = ErrorCode(rawValue: -32600)
  public static let methodNotFound = ErrorCode(rawValue: -32601)
  public static let invalidParams = ErrorCode(rawValue: -32602)
  public static let internalError = ErrorCode(rawValue: -32603)
  public static let requestCancelled = ErrorCode(rawValue: -32800)
}
