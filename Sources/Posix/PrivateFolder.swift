import Glibc

/// Whether a folder is this user's alone, so that nobody else can put a file of their
/// own where netmodel expects its socket or its state: whoever can replace the socket
/// receives what clients send, tokens included.
///
/// The rules: the folder itself is a real folder (not a symbolic link), owned by the
/// effective uid, and neither its group nor others may write it (0700, 0750 or 0755
/// pass; 0770, 0775, 0777 do not). The folder holding it is owned by us or by root,
/// and when others may write it, it has the sticky bit (as /tmp does), so nobody
/// else can rename our folder away and put theirs in its place. Folders further up
/// are not checked: a folder swapped in there would be someone else's, and clients
/// see that on the socket's folder itself.
///
/// A folder's mode is never changed here: the message says what to run instead.
public enum PrivateFolder {
  /// Why a folder is not private; `description` names the folder and the fix.
  public struct Refusal: Error, CustomStringConvertible {
    public let description: String
  }

  /// Checks `path` by the rules above. `role` names it in the message ("socket
  /// folder"); `elsewhere` is how to choose another one ("--socket=PATH").
  public static func check(_ path: String, role: String, elsewhere: String) throws(Refusal) {
    let me = geteuid()
    var info = stat()
    // lstat: a link we might own could point into a folder we do not.
    guard lstat(path, &info) == 0 else {
      throw Refusal(description: "cannot check the \(role) \(path): \(Errno.current("lstat"))")
    }
    if (info.st_mode & S_IFMT) == S_IFLNK {
      throw Refusal(
        description:
          "the \(role) \(path) is a symbolic link; netmodel uses only a real folder that it owns: "
          + "give the link's target instead, or choose another folder with \(elsewhere)")
    }
    guard (info.st_mode & S_IFMT) == S_IFDIR else {
      throw Refusal(description: "the \(role) \(path) is not a folder")
    }
    if writers(info.st_mode) != nil && info.st_mode & S_ISVTX != 0 {
      // /tmp and the like: chmod is not the fix there, a folder of our own inside is.
      throw Refusal(
        description:
          "the \(role) \(path) is shared (mode \(octal(info.st_mode))): others may add files to it; "
          + "choose a folder of netmodel's own inside it with \(elsewhere) (a missing one is created with mode 0700)")
    }
    if info.st_uid != me {
      throw Refusal(
        description:
          "the \(role) \(path) belongs to uid \(info.st_uid), not to this user (uid \(me)), so its owner "
          + "could replace what netmodel puts in it; remove it (netmodel then creates its own, mode 0700), "
          + "or choose another folder with \(elsewhere)")
    }
    if let writers = writers(info.st_mode) {
      throw Refusal(
        description:
          "the \(role) \(path) can be written by \(writers) (mode \(octal(info.st_mode))), who could replace "
          + "what netmodel puts in it; run `chmod 700 \(path)`, or choose another folder with \(elsewhere)")
    }

    let parent = FileSystem.parentFolder(of: path)
    // stat, not lstat: what protects our folder's name is the folder it is listed in.
    guard stat(parent, &info) == 0 else {
      throw Refusal(description: "cannot check \(parent), which holds the \(role): \(Errno.current("stat"))")
    }
    if info.st_uid != me && info.st_uid != 0 {
      throw Refusal(
        description:
          "\(parent), which holds the \(role) \(path), belongs to uid \(info.st_uid), who could rename "
          + "\(path) and put their own in its place; choose a folder inside one you own with \(elsewhere)")
    }
    if let writers = writers(info.st_mode), info.st_mode & S_ISVTX == 0 {
      throw Refusal(
        description:
          "\(parent), which holds the \(role) \(path), can be written by \(writers) (mode \(octal(info.st_mode))) "
          + "and has no sticky bit, so they could rename \(path) and put their own in its place; "
          + "run `chmod go-w \(parent)` (or `chmod +t \(parent)` for a shared folder like /tmp), "
          + "or choose another folder with \(elsewhere)")
    }
  }

  /// Who besides the owner may write a file of this mode; nil for nobody.
  static func writers(_ mode: mode_t) -> String? {
    switch (mode & S_IWGRP != 0, mode & S_IWOTH != 0) {
    case (true, true): return "its group and other users"
    case (true, false): return "its group"
    case (false, true): return "other users"
    case (false, false): return nil
    }
  }

  static func octal(_ mode: mode_t) -> String {
    let digits = String(mode & 0o7777, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }
}
