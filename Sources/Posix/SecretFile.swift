import Glibc

/// A file holding a secret (a token), read whole at start. What is checked is the file
/// opened, by its descriptor (`fstat`), so nothing can be swapped in between the check
/// and the read; and the path must name the file itself, not a symbolic link, so the
/// owner and mode that a reader of the configuration sees with `ls -l` are the ones
/// checked.
public enum SecretFile {
  public enum Failure: Error, CustomStringConvertible {
    /// Nothing at the path (ENOENT).
    case missing(String)
    /// There, but not to be read: the reason names the file and the fix, never the content.
    case refused(String)

    public var description: String {
      switch self {
      case .missing(let text), .refused(let text): text
      }
    }
  }

  /// More than any token; a larger file is not one (and is not read into memory).
  public static let maxBytes = 64 * 1024

  /// The bytes of the regular file at `path`. `role` names it in messages ("auth.tokenFile").
  /// `mustBePrivate`: owned by this user, and neither group nor others may read or
  /// write it (`mode & 0o077 == 0`, as `chmod 600` leaves it); systemd's credentials
  /// are its own (a private folder it made) and are not held to that.
  public static func read(_ path: String, role: String, mustBePrivate: Bool) throws(Failure) -> [UInt8] {
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(path, .readOnly, options: [.noFollow, .nonBlocking])
    } catch {
      if error.code == ENOENT { throw .missing("\(role) \(path) does not exist") }
      if error.code == ELOOP {
        throw .refused("\(role) \(path) is a symbolic link: name the file itself, so its owner and mode are checked")
      }
      throw .refused("\(role) \(path) cannot be read: \(error)")
    }
    defer { fd.close() }
    var info = stat()
    guard fstat(fd.rawValue, &info) == 0 else {
      throw .refused("\(role) \(path) cannot be read: \(Errno.current("fstat"))")
    }
    guard (info.st_mode & S_IFMT) == S_IFREG else {
      throw .refused("\(role) \(path) is \(FileSystem.kindName(info.st_mode)), not a regular file")
    }
    if mustBePrivate {
      let me = geteuid()
      guard info.st_uid == me else {
        throw .refused(
          "\(role) \(path) belongs to uid \(info.st_uid), not to this user (uid \(me)): a token file must be yours")
      }
      guard info.st_mode & 0o077 == 0 else {
        throw .refused(
          "\(role) \(path) can be read or written by others (mode \(String(info.st_mode & 0o777, radix: 8))): "
            + "run `chmod 600 \(path)` (and get a new token if others may have read it)")
      }
    }
    guard info.st_size <= maxBytes else {
      throw .refused("\(role) \(path) is \(info.st_size) bytes: too large for a token (at most \(maxBytes))")
    }
    do {
      // Checked again as read: the file may have grown since `fstat`.
      return try fd.readToEnd(atMost: maxBytes)
    } catch  where error.code == Errno.fileTooLarge {
      throw .refused("\(role) \(path) grew past \(maxBytes) bytes as it was read: too large for a token")
    } catch {
      throw .refused("\(role) \(path) cannot be read: \(error)")
    }
  }
}
