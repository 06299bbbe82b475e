/// A user id, as the kernel reports it for this process (`getuid`) and for a socket's
/// peer (`SO_PEERCRED`): a type of its own, so a uid is never mixed up with a pid, a
/// gid or a count. Shown as its number.
public struct UserID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  public var description: String { String(rawValue) }
}
