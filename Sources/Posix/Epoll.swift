import CSystem
import Glibc

/// Readiness interest and results, as epoll bits.
public struct IOEvents: OptionSet, Sendable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  public static let readable = IOEvents(rawValue: NM_EPOLLIN)
  public static let writable = IOEvents(rawValue: NM_EPOLLOUT)
  public static let error = IOEvents(rawValue: NM_EPOLLERR)
  public static let hangUp = IOEvents(rawValue: NM_EPOLLHUP | NM_EPOLLRDHUP)
}

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

  /// Waits up to `timeoutMs` (-1: forever, 0: don't wait) and calls `body` for each
  /// ready registration. The corresponding C function is `epoll_wait`.
  public func wait(timeoutMs: Int32, _ body: (UInt64, IOEvents) -> Void) throws(Errno) {
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

/// An eventfd used to wake the loop from another thread or a signal context.
public struct EventFD {
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

/// Signals delivered as readable events instead of asynchronous handlers.
public struct SignalFD {
  public let fd: FileDescriptor

  /// Blocks `signals` for the process and reports them on a descriptor.
  /// The corresponding C function is `signalfd`.
  public init(signals: [Int32]) throws(Errno) {
    let raw = signals.withUnsafeBufferPointer { nm_signalfd($0.baseAddress, Int32($0.count)) }
    if raw < 0 { throw .current("signalfd") }
    fd = FileDescriptor(rawValue: raw)
  }

  /// The next pending signal number, or nil.
  public static let terminate = SIGTERM
  public static let interrupt = SIGINT

  public func next() -> Int32? {
    let signal = nm_signalfd_read(fd.rawValue)
    return signal > 0 ? signal : nil
  }
}

public enum Process {
  /// SIGPIPE would kill the server when a peer goes away; writes see EPIPE instead.
  public static func ignoreBrokenPipes() { nm_ignore_sigpipe() }

  /// Nanoseconds of the monotonic clock.
  public static func monotonicNanoseconds() -> UInt64 { nm_monotonic_ns() }

  public static func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
  }

  public static func exit(_ code: Int32) -> Never { Glibc.exit(code) }

  /// Resident set size, from /proc/self/statm (its second field, in pages).
  public static func residentMemoryBytes() -> Int {
    let fd = open("/proc/self/statm", O_RDONLY)
    guard fd >= 0 else { return 0 }
    defer { Glibc.close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let count = Glibc.read(fd, &buffer, buffer.count)
    guard count > 0 else { return 0 }
    let fields = buffer[0..<count].split(separator: UInt8(ascii: " "))
    guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  }
}
