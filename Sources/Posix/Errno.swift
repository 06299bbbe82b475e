import CSystem
import Glibc

/// A system call's failure, carrying `errno` and the call that failed.
public struct Errno: Error, Equatable, CustomStringConvertible {
  public let code: Int32
  public let call: String

  public init(_ code: Int32, call: String) {
    self.code = code
    self.call = call
  }

  /// The current thread's `errno`, captured right after a failed call.
  public static func current(_ call: String) -> Errno { Errno(nm_errno(), call: call) }

  public var isWouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }
  public var isInterrupted: Bool { code == EINTR }

  public var description: String {
    "\(call): \(String(cString: strerror(code))) (errno \(code))"
  }

  // The codes callers above Posix test for, by name, so no layer above needs Glibc's
  // numbers.
  public static let noEntry = ENOENT
  /// epoll refuses a descriptor that cannot be polled (a regular file, /dev/null).
  public static let notPermitted = EPERM
  public static let wouldBlock = EAGAIN
  public static let brokenPipe = EPIPE
  /// What a disk that fails answers: tests inject it.
  public static let inputOutput = EIO
  public static let noSpace = ENOSPC
  /// A file larger than its reader takes (`readToEnd(atMost:)`).
  public static let fileTooLarge = EFBIG
  /// A Unix socket's path with nobody listening on it.
  public static let connectionRefused = ECONNREFUSED
}

/// Retries a call that failed with EINTR; throws `Errno` for any other failure.
@inline(__always)
func retryingInterrupts<T: BinaryInteger>(_ call: String, _ body: () -> T) throws(Errno) -> T {
  while true {
    let result = body()
    if result >= 0 { return result }
    let error = Errno.current(call)
    if !error.isInterrupted { throw error }
  }
}
