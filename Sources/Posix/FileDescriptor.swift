import CSystem
import Glibc

/// A typed file descriptor. It does not close itself: its owner calls `close()`,
/// because descriptors are handed between layers (loop registration, connections).
public struct FileDescriptor: Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32

  public init(rawValue: Int32) { self.rawValue = rawValue }

  public static let standardInput = FileDescriptor(rawValue: 0)
  public static let standardOutput = FileDescriptor(rawValue: 1)
  public static let standardError = FileDescriptor(rawValue: 2)

  public var description: String { "fd \(rawValue)" }

  /// Reads up to `count` bytes into `buffer`; returns 0 at end of file.
  /// Throws `Errno` with EAGAIN when a non-blocking descriptor has nothing to read.
  /// The corresponding C function is `read`.
  public func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(Errno) -> Int {
    try retryingInterrupts("read") { Glibc.read(rawValue, buffer, count) }
  }

  /// Writes some of the bytes; returns how many were taken.
  /// The corresponding C function is `write`.
  public func write(_ buffer: UnsafeRawPointer, count: Int) throws(Errno) -> Int {
    try retryingInterrupts("write") { Glibc.write(rawValue, buffer, count) }
  }

  /// Writes every byte, waiting if the descriptor is blocking. For stderr logs and
  /// small blocking writes only; connections use the loop's queued writes.
  public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
    var offset = 0
    while offset < bytes.count {
      do {
        offset += try write(bytes.baseAddress! + offset, count: bytes.count - offset)
      } catch  where error.isWouldBlock {
        waitUntilWritable()
      }
    }
  }

  /// Blocks until the descriptor can take bytes (or fails). The corresponding C
  /// function is `poll`.
  public func waitUntilWritable(timeout: Duration? = nil) {
    var pfd = pollfd(fd: rawValue, events: Int16(POLLOUT), revents: 0)
    _ = poll(&pfd, 1, timeout.map { Int32(clamping: $0.roundedUpMilliseconds) } ?? -1)
  }

  /// Blocks until the descriptor has bytes to read (or its end, or an error), at
  /// most `timeout` (nil: no limit); false when the time ran out. The corresponding
  /// C function is `poll`.
  public func waitUntilReadable(timeout: Duration?) -> Bool {
    var pfd = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
    let timeoutMs = timeout.map { Int32(clamping: $0.roundedUpMilliseconds) } ?? -1
    while true {
      let ready = poll(&pfd, 1, timeoutMs)
      if ready >= 0 || errno != EINTR { return ready != 0 }
    }
  }

  public func writeAll(_ string: String) throws(Errno) {
    let bytes = Array(string.utf8)
    let result = bytes.withUnsafeBytes { buf in Result { () throws(Errno) in try writeAll(buf) } }
    try result.get()
  }

  public enum Kind: Sendable {
    /// A pipe or socket: pollable, and reads or writes may have to wait.
    case stream
    /// A regular file: never waits, and epoll refuses it.
    case regularFile
    /// A terminal or a device such as /dev/null.
    case characterDevice
    case other
  }

  /// What the descriptor refers to. The corresponding C function is `fstat`.
  public var kind: Kind {
    switch nm_fd_kind(rawValue) {
    case 1: return .stream
    case 2: return .regularFile
    case 3: return .characterDevice
    default: return .other
    }
  }

  /// The corresponding C function is `close`.
  public func close() {
    _ = Glibc.close(rawValue)
  }

  /// The corresponding C function is `fcntl(F_SETFL, O_NONBLOCK)`.
  public func setNonBlocking() throws(Errno) {
    if nm_set_nonblocking(rawValue) != 0 { throw .current("fcntl(O_NONBLOCK)") }
  }

  /// Creates a connected pair of non-blocking Unix stream sockets (for tests and
  /// in-process connections). The corresponding C function is `socketpair`.
  public static func socketPair() throws(Errno) -> (FileDescriptor, FileDescriptor) {
    var fds: [Int32] = [-1, -1]
    if nm_socketpair(&fds) != 0 { throw .current("socketpair") }
    return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
  }
}
