import CSystem
import Glibc

/// An eventfd used to wake the loop from another thread or a signal context: `signal`
/// and `drain` are single system calls, safe from any thread.
public struct EventFD: Sendable {
  public let fd: FileDescriptor

  public init() throws(Errno) {
    let raw = nm_eventfd()
    if raw < 0 { throw .current("eventfd") }
    fd = FileDescriptor(rawValue: raw)
  }

  public func signal() {
    var one: UInt64 = 1
    _ = Glibc.write(fd.rawValue, &one, 8)
  }

  public func drain() {
    var value: UInt64 = 0
    _ = Glibc.read(fd.rawValue, &value, 8)
  }
}
