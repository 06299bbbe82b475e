import CSystem
import Glibc

/// An epoll instance. Registrations carry a 64-bit token the caller chooses.
public final class Epoll {
  public let fd: FileDescriptor
  private var readyEvents = [UInt32](repeating: 0, count: 256)
  private var readyTokens = [UInt64](repeating: 0, count: 256)

  /// The corresponding C function is `epoll_create1`.
  public init() throws(Errno) {
    let raw = nm_epoll_create()
    if raw < 0 { throw .current("epoll_create1") }
    fd = FileDescriptor(rawValue: raw)
  }

  deinit { fd.close() }

  /// The corresponding C function is `epoll_ctl(EPOLL_CTL_ADD)`.
  public func add(_ target: FileDescriptor, events: IOEvents, token: UInt64) throws(Errno) {
    if nm_epoll_ctl(fd.rawValue, EPOLL_CTL_ADD, target.rawValue, events.rawValue, token) != 0 {
      throw .current("epoll_ctl(ADD)")
    }
  }

  /// The corresponding C function is `epoll_ctl(EPOLL_CTL_MOD)`.
  public func modify(_ target: FileDescriptor, events: IOEvents, token: UInt64) throws(Errno) {
    if nm_epoll_ctl(fd.rawValue, EPOLL_CTL_MOD, target.rawValue, events.rawValue, token) != 0 {
      throw .current("epoll_ctl(MOD)")
    }
  }

  /// The corresponding C function is `epoll_ctl(EPOLL_CTL_DEL)`.
  public func remove(_ target: FileDescriptor) {
    _ = nm_epoll_ctl(fd.rawValue, EPOLL_CTL_DEL, target.rawValue, 0, 0)
  }

  /// Waits up to `timeout` (nil: forever, zero: don't wait) and calls `body` for each
  /// ready registration. The corresponding C function is `epoll_wait`.
  public func wait(timeout: Duration?, _ body: (UInt64, IOEvents) -> Void) throws(Errno) {
    let timeoutMs = timeout.map { Int32(clamping: $0.roundedUpMilliseconds) } ?? -1
    let count = readyEvents.withUnsafeMutableBufferPointer { events in
      readyTokens.withUnsafeMutableBufferPointer { tokens in
        nm_epoll_wait(fd.rawValue, events.baseAddress, tokens.baseAddress, 256, timeoutMs)
      }
    }
    if count < 0 {
      let error = Errno.current("epoll_wait")
      if error.isInterrupted { return }
      throw error
    }
    for i in 0..<Int(count) {
      body(readyTokens[i], IOEvents(rawValue: readyEvents[i]))
    }
  }
}
