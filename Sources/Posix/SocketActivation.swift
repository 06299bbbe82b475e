import CSystem
import Glibc

/// A listening socket handed over by a service manager (systemd's socket activation),
/// read by the `LISTEN_PID`/`LISTEN_FDS`/`LISTEN_FDNAMES` protocol of sd_listen_fds(3)
/// (https://www.freedesktop.org/software/systemd/man/latest/sd_listen_fds.html),
/// without libsystemd.
///
/// The socket gets the care `UnixSocket.listen` gives one it makes: it must be a
/// listening Unix stream socket bound to a path, in a folder that is ours alone
/// (`PrivateFolder`); peers of another uid are refused at accept as always. What the
/// manager passed that is anything else stops the server instead of being served.
public enum SocketActivation {
  /// The first passed descriptor (SD_LISTEN_FDS_START).
  public static let firstDescriptor: Int32 = 3

  /// The inherited socket and the path it is bound to.
  public struct Inherited {
    public let fd: FileDescriptor
    public let path: String
  }

  /// Why a passed descriptor is not served.
  public struct Refusal: Error, CustomStringConvertible {
    public let description: String
  }

  /// The passed socket; nil when none was passed to this process: `LISTEN_PID` unset
  /// or naming another process (the variables were meant for a parent that did not
  /// clear them), or `LISTEN_FDS=0`. The variables are removed in every case, so
  /// processes this one starts do not take them for theirs.
  public static func inherited() throws(Refusal) -> Inherited? {
    let pid = Process.environment("LISTEN_PID")
    let count = Process.environment("LISTEN_FDS")
    let names = Process.environment("LISTEN_FDNAMES")
    for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
    guard let pid else { return nil }
    guard let listenPID = Int32(pid), listenPID > 0 else {
      throw Refusal(description: "LISTEN_PID=\(pid) is not a process id")
    }
    if listenPID != getpid() {
      Log.info("LISTEN_PID=\(pid) names another process (this is \(getpid())): no socket was passed to this one")
      return nil
    }
    guard let count, let number = Int(count), number >= 0 else {
      throw Refusal(description: "LISTEN_PID is set but LISTEN_FDS=\(count ?? "(unset)") is not a count of descriptors")
    }
    if number == 0 { return nil }
    guard number == 1 else {
      throw Refusal(
        description:
          "LISTEN_FDS=\(number)\(names.map { " (LISTEN_FDNAMES=\($0))" } ?? ""): netmodel serves one socket; "
          + "give its .socket unit one ListenStream=")
    }
    let fd = FileDescriptor(rawValue: firstDescriptor)
    // Our own exec-s must not keep the socket (sd_listen_fds sets FD_CLOEXEC too).
    let flags = fcntl(fd.rawValue, F_GETFD)
    guard flags >= 0, fcntl(fd.rawValue, F_SETFD, flags | FD_CLOEXEC) == 0 else {
      throw Refusal(description: "LISTEN_FDS=1 but descriptor 3 is not open: \(Errno.current("fcntl"))")
    }
    let path = try checkListening(fd)
    do {
      try PrivateFolder.check(
        FileSystem.parentFolder(of: path), role: "socket folder", elsewhere: "the .socket unit's ListenStream=")
    } catch {
      throw Refusal(description: "refusing the passed socket \(path): \(error)")
    }
    guard nm_set_nonblocking(fd.rawValue) == 0 else {
      throw Refusal(description: "cannot make the passed socket non-blocking: \(Errno.current("fcntl"))")
    }
    return Inherited(fd: fd, path: path)
  }

  /// The path of a listening AF_UNIX SOCK_STREAM socket; refuses anything else.
  static func checkListening(_ fd: FileDescriptor) throws(Refusal) -> String {
    func option(_ name: Int32) -> Int32? {
      var value: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      return getsockopt(fd.rawValue, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
    }
    let what = "the passed descriptor 3 (LISTEN_FDS=1)"
    guard let type = option(SO_TYPE) else {
      throw Refusal(description: "\(what) is not a socket: \(Errno.current("getsockopt(SO_TYPE)"))")
    }
    guard type == Int32(SOCK_STREAM.rawValue) else {
      throw Refusal(description: "\(what) is not a stream socket; use ListenStream= in the .socket unit")
    }
    var address = sockaddr_un()
    var length = socklen_t(MemoryLayout<sockaddr_un>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd.rawValue, $0, &length) }
    }
    guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else {
      throw Refusal(description: "\(what) is not a Unix socket; ListenStream= must be a path")
    }
    let path = withUnsafeBytes(of: address.sun_path) { bytes in
      let sunPathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
      let used = min(bytes.count, max(0, Int(length) - sunPathOffset))
      return String(decoding: bytes.prefix(used).prefix { $0 != 0 }, as: UTF8.self)
    }
    // An abstract or unnamed socket has no folder whose owner we could check.
    guard path.hasPrefix("/") else {
      throw Refusal(description: "\(what) is not bound to a path in the file system; ListenStream= must be one")
    }
    guard option(SO_ACCEPTCONN) == 1 else {
      throw Refusal(description: "\(what) (\(path)) is not listening; set Accept=no in the .socket unit")
    }
    return path
  }
}
