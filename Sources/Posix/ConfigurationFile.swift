import Glibc

/// A file that says where the auth token is sent and which file is read as the token (a
/// REST configuration, netmodel.json): whoever can change it can have the token sent
/// elsewhere. So, as ssh holds its own configuration to, it must belong to this user (or
/// root) and others must not be able to write it. A group that can write it is told in
/// a warning, not refused: with a umask of 002 (user private groups) every file a clone
/// makes is so.
public enum ConfigurationFile {
  public enum Failure: Error, CustomStringConvertible {
    /// It could not be opened or read.
    case unreadable(Errno)
    /// It is there, but not one to take: someone else could change what it says, or
    /// it is far too large for a configuration.
    case unsafe(String)

    public var description: String {
      switch self {
      case .unreadable(let error): "\(error)"
      case .unsafe(let text): text
      }
    }
  }

  /// The most a configuration file may hold: far more than any written by hand, far
  /// less than what would hold the daemon up to read (`/dev/zero` linked in its place).
  public static let maxBytes = 1 << 20

  /// The file's bytes, checked by the descriptor read (nothing can be swapped in
  /// between), and a warning when its group may write it.
  public static func read(_ path: String, role: String) throws(Failure) -> (bytes: [UInt8], warning: String?) {
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking])
    } catch {
      throw .unreadable(error)
    }
    defer { fd.close() }
    var info = stat()
    guard fstat(fd.rawValue, &info) == 0 else { throw .unreadable(Errno.current("fstat \(path)")) }
    let me = geteuid()
    guard info.st_uid == me || info.st_uid == 0 else {
      throw .unsafe(
        "\(role) \(path) belongs to uid \(info.st_uid), not to this user (uid \(me)) or root: "
          + "its owner could have the auth token sent elsewhere; use a copy of your own")
    }
    let mode = String(info.st_mode & 0o777, radix: 8)
    guard info.st_mode & 0o002 == 0 else {
      throw .unsafe(
        "\(role) \(path) can be written by anyone (mode \(mode)), who could have the auth token sent elsewhere: "
          + "run `chmod o-w \(path)`")
    }
    let warning =
      info.st_mode & 0o020 == 0
      ? nil : "\(role) \(path) can be written by its group (mode \(mode)); `chmod g-w \(path)` keeps it yours alone"
    do {
      return (try fd.readToEnd(atMost: maxBytes), warning)
    } catch  where error.code == Errno.fileTooLarge {
      throw .unsafe("\(role) \(path) is larger than \(maxBytes >> 20) MiB: not a configuration file")
    } catch {
      throw .unreadable(Errno(error.code, call: "read \(path)"))
    }
  }
}
