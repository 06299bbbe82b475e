import CSystem
import Glibc

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

  public static let terminate = SIGTERM
  public static let interrupt = SIGINT
  /// The terminal was resized.
  public static let windowChange = SIGWINCH

  /// The next pending signal number, or nil.
  public func next() -> Int32? {
    let signal = nm_signalfd_read(fd.rawValue)
    return signal > 0 ? signal : nil
  }
}
