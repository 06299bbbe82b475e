import Glibc

/// The terminal a full-screen command (`netmodel top`) draws on.
public enum Terminal {
  public static func isTerminal(_ fd: FileDescriptor) -> Bool { isatty(fd.rawValue) == 1 }

  /// Rows and columns of the terminal on `fd` (TIOCGWINSZ); nil when it is none or
  /// does not say.
  public static func size(of fd: FileDescriptor) -> (rows: Int, columns: Int)? {
    var size = winsize()
    guard ioctl(fd.rawValue, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return nil }
    return (Int(size.ws_row), Int(size.ws_col))
  }

  /// A terminal switched to reading keys one by one without echo, so a key acts
  /// without Enter; `restore()` gives the shell back the terminal as it was.
  public struct KeyByKey {
    private let fd: FileDescriptor
    private var saved: termios

    /// Nil when `fd` is not a terminal or its mode cannot be read.
    public init?(_ fd: FileDescriptor) {
      guard Terminal.isTerminal(fd) else { return nil }
      var attributes = termios()
      guard tcgetattr(fd.rawValue, &attributes) == 0 else { return nil }
      self.fd = fd
      saved = attributes
      attributes.c_lflag &= ~tcflag_t(ICANON | ECHO)
      _ = tcsetattr(fd.rawValue, TCSANOW, &attributes)
    }

    public mutating func restore() { _ = tcsetattr(fd.rawValue, TCSANOW, &saved) }
  }
}

/// Waits for several descriptors at once without an event loop (a command's one
/// thread): poll(2).
public enum Poll {
  /// Which of `descriptors` are readable (or hung up) within `timeout` (nil: no limit);
  /// a nil entry is not watched. Interrupted by a signal: none is ready.
  public static func readable(_ descriptors: [FileDescriptor?], timeout: Duration?) throws(Errno) -> [Bool] {
    var fds = descriptors.map { pollfd(fd: $0?.rawValue ?? -1, events: Int16(POLLIN), revents: 0) }
    let milliseconds = timeout.map { Int32(clamping: max(0, $0.roundedUpMilliseconds)) } ?? -1
    if poll(&fds, nfds_t(fds.count), milliseconds) < 0 {
      let error = Errno.current("poll")
      if !error.isInterrupted { throw error }
      return descriptors.map { _ in false }
    }
    return fds.map { $0.revents != 0 }
  }
}
