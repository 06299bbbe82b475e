import CSystem

/// Readiness interest and results, as epoll bits.
public struct IOEvents: OptionSet, Sendable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  public static let readable = IOEvents(rawValue: NM_EPOLLIN)
  public static let writable = IOEvents(rawValue: NM_EPOLLOUT)
  public static let error = IOEvents(rawValue: NM_EPOLLERR)
  public static let hangUp = IOEvents(rawValue: NM_EPOLLHUP | NM_EPOLLRDHUP)
  /// The peer is gone both ways (EPOLLHUP alone): on a Unix socket, it closed, where a
  /// peer that only ended its output (`shutdown(SHUT_WR)`) gives EPOLLRDHUP.
  public static let closedBothWays = IOEvents(rawValue: NM_EPOLLHUP)
}
