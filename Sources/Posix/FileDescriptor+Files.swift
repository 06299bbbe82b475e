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

  /// Moves the file offset to `offset` bytes from the start. The corresponding C
  /// function is `lseek`.
  public func seek(toOffset offset: Int) throws(Errno) {
    if lseek(rawValue, off_t(offset), SEEK_SET) < 0 { throw .current("lseek") }
  }

  /// The size in bytes of the file. The corresponding C function is `fstat`.
  public func fileSize() throws(Errno) -> Int {
    var info = stat()
    if fstat(rawValue, &info) != 0 { throw .current("fstat") }
    return Int(info.st_size)
  }

  /// Reads from the current offset to the end of the file (blocking descriptors),
  /// in chunks sized by the file's size and not zeroed first: the files read at start
  /// are small, and a zeroed 64 KiB chunk for each was 16 page faults and a memset
  /// before the first answer. A file larger than `limit` throws `Errno.fileTooLarge`:
  /// its reader is told, not handed a part; when its size says so, before anything is
  /// read.
  public func readToEnd(atMost limit: Int = .max) throws(Errno) -> [UInt8] {
    var result: [UInt8] = []
    let size = (try? fileSize()) ?? 0
    // A regular file's size is what a read would find: refused before a byte is read
    // (a sparse file of 64 GiB would otherwise be read up to the limit first).
    if size > limit { throw Errno(Errno.fileTooLarge, call: "read: more than \(limit) bytes") }
    // A byte more than the size, so that the next read, at the end, needs no more room;
    // and no more than `firstReadCap` however large the size said (sparse, or lying).
    var room = min(max(size + 1, 4096), Self.firstReadCap)
    while true {
      // One byte past the limit tells a file that is larger from one that fits exactly.
      let remaining = limit - result.count
      let wanted = remaining < room ? remaining + 1 : room
      var outcome: Result<Int, Errno> = .success(0)
      let chunk = [UInt8](unsafeUninitializedCapacity: wanted) { buffer, initialized in
        outcome = Result { () throws(Errno) in try read(into: buffer.baseAddress!, count: buffer.count) }
        initialized = (try? outcome.get()) ?? 0
      }
      _ = try outcome.get()
      if chunk.isEmpty { return result }
      if result.isEmpty { result = chunk } else { result += chunk }
      if result.count > limit { throw Errno(Errno.fileTooLarge, call: "read: more than \(limit) bytes") }
      // The file grew while it was read (or has no size, a pipe): larger chunks from now.
      room = max(room, 64 * 1024)
    }
  }

  /// The largest first read `readToEnd` makes from the size `fstat` tells.
  static let firstReadCap = 16 << 20

  /// Writes every byte of `bytes` (blocking descriptors).
  public func writeAll(_ bytes: [UInt8]) throws(Errno) {
    let result = bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try writeAll(buffer) } }
    try result.get()
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
