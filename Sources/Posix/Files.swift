import CSystem
import Glibc

// Regular files and folders: what the state folder (outbox, local store) needs.
// Every raw call sits here; paths appear in `Errno.call`, so a logged failure says
// which file it was about.

extension FileDescriptor {
  public enum AccessMode: Sendable {
    case readOnly, writeOnly, readWrite
  }

  /// Flags for `open`. Close-on-exec is always set.
  public struct OpenOptions: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Create the file when it does not exist (`O_CREAT`).
    public static let create = OpenOptions(rawValue: O_CREAT)
    /// With `.create`: fail with EEXIST when the file exists (`O_EXCL`).
    public static let exclusive = OpenOptions(rawValue: O_EXCL)
    /// Cut the file to length 0 (`O_TRUNC`).
    public static let truncate = OpenOptions(rawValue: O_TRUNC)
    /// Every write goes to the end of the file (`O_APPEND`).
    public static let append = OpenOptions(rawValue: O_APPEND)
    /// Fail unless the path is a folder (`O_DIRECTORY`).
    public static let directory = OpenOptions(rawValue: O_DIRECTORY)
    /// Fail with ELOOP when the last component is a symbolic link (`O_NOFOLLOW`).
    public static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
    /// Never wait in `open` itself, as a FIFO without a peer would (`O_NONBLOCK`).
    public static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
  }

  /// Opens `path`; `permissions` apply only when the file is created (less the
  /// umask). The corresponding C function is `open`.
  public static func open(
    _ path: String, _ access: AccessMode, options: OpenOptions = [], permissions: mode_t = 0o600
  ) throws(Errno) -> FileDescriptor {
    var flags = options.rawValue | O_CLOEXEC
    switch access {
    case .readOnly: flags |= O_RDONLY
    case .writeOnly: flags |= O_WRONLY
    case .readWrite: flags |= O_RDWR
    }
    let fd = try retryingInterrupts("open \(path)") { Glibc.open(path, flags, permissions) }
    return FileDescriptor(rawValue: fd)
  }

  /// Opens `path` only when it is a regular file: never through a symbolic link (a
  /// link planted there would make a write land in, or a truncation hit, whatever it
  /// points to), and never waiting on a FIFO or a device, which could block `open`
  /// before signals are even handled. Anything else fails with a message that names
  /// what is there. `O_NONBLOCK` stays set, which changes nothing for a regular file.
  public static func openRegularFile(
    _ path: String, _ access: AccessMode, options: OpenOptions = [], permissions: mode_t = 0o600
  ) throws(Errno) -> FileDescriptor {
    let fd: FileDescriptor
    do {
      fd = try open(path, access, options: options.union([.noFollow, .nonBlocking]), permissions: permissions)
    } catch {
      // ELOOP (a link), ENXIO (a FIFO nobody reads), EISDIR…: say what is there.
      if error.code != ENOENT, let what = FileSystem.nonRegularKind(path) {
        throw FileSystem.notRegular(path, what, code: error.code)
      }
      throw error
    }
    var info = stat()
    if fstat(fd.rawValue, &info) != 0 {
      let error = Errno.current("fstat \(path)")
      fd.close()
      throw error
    }
    if (info.st_mode & S_IFMT) != S_IFREG {
      fd.close()
      throw FileSystem.notRegular(path, FileSystem.kindName(info.st_mode), code: EINVAL)
    }
    return fd
  }

  /// Makes what was written durable: data and metadata reach the disk.
  /// The corresponding C function is `fsync`.
  public func sync() throws(Errno) {
    _ = try retryingInterrupts("fsync") { Glibc.fsync(rawValue) }
  }

  /// Cuts the file to `size` bytes: shrinking needs no free space, so it undoes an
  /// append that a full disk interrupted. The corresponding C function is `ftruncate`.
  public func truncate(toSize size: Int) throws(Errno) {
    _ = try retryingInterrupts("ftruncate") { ftruncate(rawValue, off_t(size)) }
  }

  /// The size in bytes of the file. The corresponding C function is `fstat`.
  public func fileSize() throws(Errno) -> Int {
    var info = stat()
    if fstat(rawValue, &info) != 0 { throw .current("fstat") }
    return Int(info.st_size)
  }

  /// Reads from the current offset to the end of the file (blocking descriptors).
  public func readToEnd() throws(Errno) -> [UInt8] {
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = try chunk.withUnsafeMutableBytes { buffer in
        Result { () throws(Errno) in try read(into: buffer.baseAddress!, count: buffer.count) }
      }.get()
      if count == 0 { return result }
      result.append(contentsOf: chunk[0..<count])
    }
  }

  /// Writes every byte of `bytes` (blocking descriptors).
  public func writeAll(_ bytes: [UInt8]) throws(Errno) {
    let result = bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try writeAll(buffer) } }
    try result.get()
  }
}

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

  /// The whole content of the file at `path`.
  public static func readFile(_ path: String) throws(Errno) -> [UInt8] {
    let fd = try FileDescriptor.open(path, .readOnly)
    defer { fd.close() }
    do {
      return try fd.readToEnd()
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

extension Process {
  /// This process's id. The corresponding C function is `getpid`.
  public static var id: Int32 { getpid() }

  /// Whether a process with this id exists (it may belong to another user).
  /// The corresponding C function is `kill` with signal 0.
  public static func exists(_ pid: Int32) -> Bool {
    pid > 0 && (kill(pid, 0) == 0 || nm_errno() != ESRCH)
  }

  /// The current user's home folder from the password database, for when `$HOME`
  /// is unset. The corresponding C function is `getpwuid`.
  public static func passwordDatabaseHome() -> String? {
    guard let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir else { return nil }
    let home = String(cString: dir)
    return home.isEmpty ? nil : home
  }
}

extension FileDescriptor {
  /// Takes an exclusive advisory lock without waiting; false when another process
  /// holds it. The lock lasts until the descriptor is closed or the process ends
  /// (a kill -9 included). The corresponding C function is `flock`.
  public func tryLockExclusive() throws(Errno) -> Bool {
    if flock(rawValue, LOCK_EX | LOCK_NB) == 0 { return true }
    let error = Errno.current("flock")
    if error.isWouldBlock { return false }
    throw error
  }
}
