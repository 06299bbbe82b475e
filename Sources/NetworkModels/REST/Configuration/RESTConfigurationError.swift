/// Why a configuration was refused: the JSON Pointer of the bad field and the reason,
/// as `netmodel check-config` and the server's start print them.
public struct RESTConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
  public var path: String
  public var reason: String
  public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}
