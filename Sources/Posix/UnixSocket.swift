import CSystem
import Glibc

/// Unix stream sockets: listen, accept with peer credentials, connect.
public enum UnixSocket {
  /// Why a listening socket could not be made.
  public enum ListenError: Error, CustomStringConvertible {
    /// Another live process answers on the path; it is left alone.
    case inUse(path: String)
    /// The socket's folder is not ours alone (see `PrivateFolder`); no socket was made.
    case notPrivate(PrivateFolder.Refusal, path: String)
    /// Something that is not a socket is at the path: it is never removed.
    case notASocket(what: String, path: String)
    case system(Errno, path: String)

    public var description: String {
      switch self {
      case .inUse(let path):
        return "another netmodel server is already listening on \(path); stop it or choose --socket=PATH"
      case .notPrivate(let refusal, let path): return "refusing to listen on \(path): \(refusal)"
      case .notASocket(let what, let path):
        return
          "refusing to listen on \(path): it is \(what), not a socket, and netmodel only ever replaces a socket "
          + "left by a server that stopped; move it away or choose another --socket=PATH"
      case .system(let errno, let path): return "cannot listen on \(path): \(errno)"
      }
    }
  }

  /// Binds and listens on `path`, creating its folder with mode 0700 and giving the
  /// socket mode 0600. The folder must be ours alone (`PrivateFolder`): in a folder
  /// others can write, they could swap in a socket of their own and hear our clients.
  /// A socket file that nobody answers on (left by a dead server) is replaced; one
  /// with a live listener is never taken over, and anything else there (a regular
  /// file, a link) is never removed.
  public static func listen(path: String, backlog: Int32 = 128) throws(ListenError) -> FileDescriptor {
    let folder = parentFolder(of: path)
    do { try makeFolder(folder, mode: 0o700) } catch { throw .system(error, path: folder) }
    do {
      try PrivateFolder.check(folder, role: "socket folder", elsewhere: "--socket=PATH")
    } catch {
      throw .notPrivate(error, path: path)
    }

    let fd = nm_unix_socket()
    if fd < 0 { throw .system(.current("socket"), path: path) }
    let socket = FileDescriptor(rawValue: fd)
    // No umask trick (it is process-wide, and would change files other code creates
    // meanwhile): the socket is chmod-ed right after bind, and a peer of another user
    // that connects in that moment is refused by its credentials anyway.
    var result = nm_unix_bind(fd, path)
    if result != 0 && nm_errno() == EADDRINUSE {
      if FileSystem.exists(path) && !FileSystem.isSocket(path) {
        socket.close()
        throw .notASocket(what: FileSystem.nonRegularKind(path) ?? "a regular file", path: path)
      }
      if isAnswering(path: path) {
        socket.close()
        throw .inUse(path: path)
      }
      unlink(path)
      result = nm_unix_bind(fd, path)
    }
    if result != 0 {
      let error = Errno.current("bind")
      socket.close()
      throw .system(error, path: path)
    }
    chmod(path, 0o600)
    if Glibc.listen(fd, backlog) != 0 {
      let error = Errno.current("listen")
      socket.close()
      throw .system(error, path: path)
    }
    return socket
  }

  /// Accepts one pending connection, non-blocking and close-on-exec; nil when none waits.
  /// The corresponding C function is `accept4`.
  public static func accept(_ listener: FileDescriptor) throws(Errno) -> FileDescriptor? {
    while true {
      let fd = nm_accept(listener.rawValue)
      if fd >= 0 { return FileDescriptor(rawValue: fd) }
      let error = Errno.current("accept4")
      if error.isInterrupted || error.code == ECONNABORTED { continue }
      if error.isWouldBlock { return nil }
      throw error
    }
  }

  /// The user of the process at the other end, as it was when it connected. The
  /// corresponding option is `SO_PEERCRED`.
  public static func peerUID(_ fd: FileDescriptor) throws(Errno) -> UserID {
    var uid: UInt32 = 0
    if nm_peer_uid(fd.rawValue, &uid) != 0 { throw .current("getsockopt(SO_PEERCRED)") }
    return UserID(rawValue: uid)
  }

  /// Connects to a listening socket; the returned descriptor is blocking.
  public static func connect(path: String) throws(Errno) -> FileDescriptor {
    let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    if fd < 0 { throw .current("socket") }
    if nm_unix_connect(fd, path) != 0 {
      let error = Errno.current("connect")
      Glibc.close(fd)
      throw error
    }
    return FileDescriptor(rawValue: fd)
  }

  /// True when a server accepts connections on `path`.
  public static func isAnswering(path: String) -> Bool {
    guard let fd = try? connect(path: path) else { return false }
    fd.close()
    return true
  }

  /// The user this process runs as. The corresponding C function is `getuid`.
  public static func currentUID() -> UserID { UserID(rawValue: getuid()) }

  static func parentFolder(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }

  /// Creates `path` and its missing parents; the last component gets `mode`.
  /// An existing folder is left as it is: a folder netmodel did not create is not
  /// netmodel's to change (`listen` refuses it when it is not private instead).
  static func makeFolder(_ path: String, mode: mode_t) throws(Errno) {
    // chmod after mkdir: the mode must not depend on the umask of the moment.
    if mkdir(path, mode) == 0 {
      chmod(path, mode)
      return
    }
    let error = Errno.current("mkdir")
    var info = stat()
    // An existing folder can fail with EACCES rather than EEXIST when its parent is
    // not writable to us; what matters is that it is there.
    if stat(path, &info) == 0 {
      guard (info.st_mode & S_IFMT) == S_IFDIR else { throw Errno(ENOTDIR, call: "mkdir") }
      return
    }
    guard error.code == ENOENT else { throw error }
    try makeFolder(parentFolder(of: path), mode: 0o755)
    if mkdir(path, mode) != 0 && nm_errno() != EEXIST { throw .current("mkdir") }
    chmod(path, mode)
  }
}

/// Removes a socket file; anything else put at its path meanwhile is left alone.
/// The corresponding C function is `unlink`.
public func unlinkSocket(_ path: String) {
  if FileSystem.isSocket(path) { unlink(path) }
}
