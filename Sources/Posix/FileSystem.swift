import CSystem
import Glibc

/// Paths and folders.
public enum FileSystem {
  /// Whether anything exists at `path` (a dangling symbolic link counts).
  /// The corresponding C function is `lstat`.
  public static func exists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  /// What is at `path` when it is there and not a regular file ("a symbolic link",
  /// "a FIFO"…), without following a link; nil otherwise.
  public static func nonRegularKind(_ path: String) -> String? {
    var info = stat()
    guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG else { return nil }
    return kindName(info.st_mode)
  }

  static func kindName(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFLNK: return "a symbolic link"
    case S_IFIFO: return "a FIFO"
    case S_IFSOCK: return "a socket"
    case S_IFDIR: return "a folder"
    case S_IFCHR, S_IFBLK: return "a device"
    case S_IFREG: return "a regular file"
    default: return "not a regular file"
    }
  }

  static func notRegular(_ path: String, _ what: String, code: Int32) -> Errno {
    Errno(code, call: "\(path) is \(what), not a regular file; netmodel uses only regular files there (remove it)")
  }

  /// Whether `path` is a socket (not following symbolic links).
  public static func isSocket(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
  }

  /// Whether `path` is a folder (following symbolic links).
  public static func isFolder(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
  }

  /// The permission bits (`0o7777`) of `path`, following symbolic links.
  /// The corresponding C function is `stat`.
  public static func permissions(_ path: String) throws(Errno) -> mode_t {
    var info = stat()
    if stat(path, &info) != 0 { throw .current("stat \(path)") }
    return info.st_mode & 0o7777
  }

  /// The whole content of the file at `path`; more than `limit` bytes throws
  /// `Errno.fileTooLarge`.
  public static func readFile(_ path: String, atMost limit: Int = .max) throws(Errno) -> [UInt8] {
    let fd = try FileDescriptor.open(path, .readOnly)
    defer { fd.close() }
    do {
      return try fd.readToEnd(atMost: limit)
    } catch {
      throw Errno(error.code, call: "read \(path)")
    }
  }

  /// Creates `path` and its missing parents (`mkdir -p`). Created folders get
  /// `mode`, parents `parentMode` (less the umask). An existing folder is left as it
  /// is: its mode is never changed. The corresponding C function is `mkdir`.
  public static func makeFolders(_ path: String, mode: mode_t = 0o700, parentMode: mode_t = 0o700) throws(Errno) {
    if mkdir(path, mode) == 0 { return }
    let error = Errno.current("mkdir \(path)")
    // An existing folder can fail with EACCES rather than EEXIST when its parent is
    // not writable to us; what matters is that it is there.
    if isFolder(path) { return }
    if exists(path) { throw Errno(ENOTDIR, call: "mkdir \(path)") }
    guard error.code == ENOENT else { throw error }
    let parent = parentFolder(of: path)
    if parent != path { try makeFolders(parent, mode: parentMode, parentMode: parentMode) }
    if mkdir(path, mode) != 0 && nm_errno() != EEXIST { throw .current("mkdir \(path)") }
  }

  /// The folder holding `path` ("." for a bare name).
  public static func parentFolder(of path: String) -> String {
    var trimmed = Substring(path)
    while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
    guard let slash = trimmed.lastIndex(of: "/") else { return "." }
    return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
  }

  /// Atomically replaces `target` with `source` (same file system).
  /// The corresponding C function is `rename`.
  public static func rename(_ source: String, to target: String) throws(Errno) {
    if Glibc.rename(source, target) != 0 { throw .current("rename \(source) to \(target)") }
  }

  /// Removes a file. The corresponding C function is `unlink`.
  public static func removeFile(_ path: String) throws(Errno) {
    if unlink(path) != 0 { throw .current("unlink \(path)") }
  }

  /// Makes the entries of a folder (created, renamed, removed files) durable.
  /// The corresponding C function is `fsync` on the folder.
  public static func syncFolder(_ path: String) throws(Errno) {
    let fd = try FileDescriptor.open(path, .readOnly, options: .directory)
    defer { fd.close() }
    do {
      try fd.sync()
    } catch {
      throw Errno(error.code, call: "fsync \(path)")
    }
  }

  /// The names in a folder, without "." and "..", in no particular order.
  /// The corresponding C functions are `opendir` and `readdir`.
  public static func contentsOfFolder(_ path: String) throws(Errno) -> [String] {
    guard let dir = opendir(path) else { throw .current("opendir \(path)") }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafePointer(to: &entry.pointee.d_name) {
        $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
          String(cString: $0)
        }
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  /// Creates a new, empty folder `<parent>/<prefix>XXXXXX` with mode 0700 and
  /// returns its path. The corresponding C function is `mkdtemp`.
  public static func makeTemporaryFolder(prefix: String = "netmodel-", in parent: String = "/tmp") throws(Errno)
    -> String
  {
    var template = Array((parent + "/" + prefix + "XXXXXX").utf8CString)
    guard let result = mkdtemp(&template) else { throw .current("mkdtemp") }
    return String(cString: result)
  }

  /// Removes `path` and, when it is a folder, everything in it (`rm -rf`); symbolic
  /// links are removed, never followed. Errors are ignored: for tests and clean-up.
  public static func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if (info.st_mode & S_IFMT) == S_IFDIR {
      for name in (try? contentsOfFolder(path)) ?? [] { removeTree(path + "/" + name) }
      rmdir(path)
    } else {
      unlink(path)
    }
  }
}
