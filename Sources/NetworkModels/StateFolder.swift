import Posix

/// The folder where durable state lives (the outbox, the local backend's store):
/// `--state-dir` when given, else `$XDG_STATE_HOME/netmodel`, else
/// `$HOME/.local/state/netmodel`. Created with mode 0700 (parents too, as the XDG
/// base directory specification asks); an existing folder's mode is never changed.
///
/// Only regular files are used in it: a symbolic link, a FIFO or anything else where
/// a state file should be makes the open fail with a message (see
/// `FileDescriptor.openRegularFile`), so a link cannot send a write or a truncation
/// elsewhere and a FIFO cannot hang the start.
///
/// Files in it are replaced atomically: written to a temporary file in the same
/// folder, synced, renamed over the target, and the folder synced, so a crash leaves
/// either the old or the new content, never a mix.
public struct StateFolder: Sendable, CustomStringConvertible {
  public let path: String
  /// The seam of the file layer, for tests only: told of every change made to the
  /// files of this folder (by this type, the outbox and the local backend), in order,
  /// before it is made; it may throw to make that call fail. Crash-consistency tests
  /// record the sequence with it and replay every state a power loss could leave.
  public var observer: (any StateFileObserver)?

  /// Uses `path` as the state folder, creating it (and missing parents) when needed.
  public init(path: String) throws(Errno) {
    self.path = path
    try FileSystem.makeFolders(path, mode: 0o700, parentMode: 0o700)
  }

  /// Resolves the state folder as the command line asks, and creates it.
  /// `environment` is for tests; it defaults to the process environment.
  public init(
    stateDir: String?, environment: (String) -> String? = { Process.environment($0) }
  ) throws(Errno) {
    try self.init(path: StateFolder.resolve(stateDir: stateDir, environment: environment))
  }

  /// The path `init(stateDir:environment:)` would use, without touching the disk.
  /// `$XDG_STATE_HOME` counts only when it is an absolute path (a relative one is
  /// invalid by the XDG specification); so does `$HOME` (a relative one would put the
  /// state in whatever folder the server started in, intents split across them), and
  /// without one the password database is asked. Throws ENOENT when no home folder can
  /// be found at all.
  public static func resolve(
    stateDir: String?, environment: (String) -> String? = { Process.environment($0) }
  ) throws(Errno) -> String {
    if let stateDir, !stateDir.isEmpty { return stateDir }
    if let xdg = environment("XDG_STATE_HOME"), xdg.hasPrefix("/") {
      return joined(xdg, "netmodel")
    }
    if let home = environment("HOME"), home.hasPrefix("/") {
      return joined(home, ".local/state/netmodel")
    }
    if let home = Process.passwordDatabaseHome() {
      return joined(home, ".local/state/netmodel")
    }
    throw Errno(Errno.noEntry, call: "state folder: no --state-dir, $XDG_STATE_HOME or $HOME")
  }

  private static func joined(_ folder: String, _ name: String) -> String {
    folder.hasSuffix("/") ? folder + name : folder + "/" + name
  }

  public var description: String { path }

  /// The path of the file `name` in this folder.
  public func file(_ name: String) -> String { StateFolder.joined(path, name) }

  /// Opens the regular file `name` of this folder; see `FileDescriptor.openRegularFile`.
  public func open(
    _ name: String, _ access: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = []
  ) throws(Errno) -> FileDescriptor {
    if let observer, access != .readOnly {
      try observer.willPerform(
        .open(name, create: options.contains(.create), truncate: options.contains(.truncate)))
    }
    return try FileDescriptor.openRegularFile(file(name), access, options: options, permissions: 0o600)
  }

  /// Writes `bytes` to `fd`, the open file `name` of this folder.
  public func write(_ bytes: [UInt8], to fd: FileDescriptor, _ name: String) throws(Errno) {
    try observer?.willPerform(.write(name, bytes))
    try fd.writeAll(bytes)
  }

  /// Syncs `fd`, the open file `name` of this folder (fsync).
  public func sync(_ fd: FileDescriptor, _ name: String) throws(Errno) {
    try observer?.willPerform(.sync(name))
    try fd.sync()
  }

  /// Cuts `fd`, the open file `name` of this folder, to `size` bytes.
  public func truncate(_ fd: FileDescriptor, _ name: String, toSize size: Int) throws(Errno) {
    try observer?.willPerform(.truncate(name, size))
    try fd.truncate(toSize: size)
  }

  /// Makes the folder's entries (created, renamed, removed files) durable.
  public func syncFolder() throws(Errno) {
    try observer?.willPerform(.syncFolder)
    try FileSystem.syncFolder(path)
  }

  private func rename(_ name: String, to target: String) throws(Errno) {
    try observer?.willPerform(.rename(name, to: target))
    try FileSystem.rename(file(name), to: file(target))
  }

  public func remove(_ name: String) throws(Errno) {
    try observer?.willPerform(.remove(name))
    try FileSystem.removeFile(file(name))
  }

  /// The largest file `read` takes: each file netmodel writes here is bounded far
  /// below it (by its options: --max-ledger-bytes, --max-warm-bytes, the entities it
  /// may hold), so a larger one was put there by someone else, and reading it whole
  /// could take the memory of the machine.
  public static let maxFileBytes = 1 << 30

  /// The content of `name`, or nil when there is no such file.
  public func read(_ name: String) throws(Errno) -> [UInt8]? {
    let fd: FileDescriptor
    do {
      fd = try open(name, .readOnly)
    } catch  where error.code == Errno.noEntry {
      return nil
    }
    defer { fd.close() }
    do {
      return try fd.readToEnd(atMost: Self.maxFileBytes)
    } catch  where error.code == Errno.fileTooLarge {
      throw Errno(error.code, call: "read \(file(name)) (more than 1 GiB: not a file netmodel wrote)")
    } catch {
      throw Errno(error.code, call: "read \(file(name))")
    }
  }

  public func exists(_ name: String) -> Bool { FileSystem.exists(file(name)) }

  /// Replaces `name` with `bytes` atomically and durably: when this returns, the new
  /// content survives a crash or power loss; when it throws, the old content is
  /// still there and no temporary file is left behind.
  public func replace(_ name: String, with bytes: [UInt8]) throws(Errno) {
    let temporaryName = StateFolder.temporaryName(for: name, pid: Process.id)
    let temporary = file(temporaryName)
    let fd = try open(temporaryName, .writeOnly, options: [.create, .truncate])
    do throws(Errno) {
      do {
        try write(bytes, to: fd, temporaryName)
        try sync(fd, temporaryName)
      } catch {
        fd.close()
        throw Errno(error.code, call: "\(error.call) \(temporary)")
      }
      fd.close()
      try rename(temporaryName, to: name)
    } catch {
      try? remove(temporaryName)
      throw error
    }
    // The rename happened: the new content is in place. Syncing the folder makes the
    // rename itself survive a power loss.
    try syncFolder()
  }

  /// Replaces `name` with `bytes` atomically against a crash of the process (a
  /// temporary file renamed over it), not durably: for a file that is a cache, whose
  /// loss costs a read, not a user's intent.
  public func replaceQuickly(_ name: String, with bytes: [UInt8]) throws(Errno) {
    let temporaryName = StateFolder.temporaryName(for: name, pid: Process.id)
    let fd = try open(temporaryName, .writeOnly, options: [.create, .truncate])
    do throws(Errno) {
      defer { fd.close() }
      try write(bytes, to: fd, temporaryName)
    } catch {
      try? remove(temporaryName)
      throw error
    }
    do {
      try rename(temporaryName, to: name)
    } catch {
      try? remove(temporaryName)
      throw error
    }
  }

  /// Renames `name` to `name.<suffix>-<n>` with the first n ≥ 1 that is free, and
  /// returns the new name. Used to keep a file that could not be read for a human
  /// to look at, instead of overwriting it.
  @discardableResult
  public func moveAside(_ name: String, suffix: String) throws(Errno) -> String {
    var n = 1
    while exists("\(name).\(suffix)-\(n)") { n += 1 }
    let aside = "\(name).\(suffix)-\(n)"
    try rename(name, to: aside)
    try? syncFolder()
    return aside
  }

  /// Removes temporary files that a process which no longer runs left behind when it
  /// stopped in the middle of `replace`. Files of live processes are left alone:
  /// another instance may be writing them now.
  public func removeStaleTemporaries() {
    guard let names = try? FileSystem.contentsOfFolder(path) else { return }
    for name in names {
      guard name.hasPrefix("."), let dash = name.lastIndex(of: "-"), name[..<dash].hasSuffix(".tmp") else { continue }
      guard let pid = Int32(name[name.index(after: dash)...]), !Process.exists(pid) else { continue }
      try? remove(name)
    }
  }

  /// `.<name>.tmp-<pid>`: hidden, in the same folder (so rename is atomic), one per
  /// process (two instances sharing the folder never write the same temporary).
  static func temporaryName(for name: String, pid: Int32) -> String { ".\(name).tmp-\(pid)" }
}

/// A change to a state file, as `StateFolder.observer` is told of it.
public enum StateFileOperation: Sendable, Equatable {
  /// An open for writing; `create`: `O_CREAT`, `truncate`: `O_TRUNC`.
  case open(String, create: Bool, truncate: Bool)
  /// Bytes written at the end of the file (every state file write appends, or writes
  /// a fresh temporary file from its start).
  case write(String, [UInt8])
  case sync(String)
  case truncate(String, Int)
  case rename(String, to: String)
  case remove(String)
  case syncFolder
}

/// See `StateFolder.observer`.
public protocol StateFileObserver: AnyObject, Sendable {
  /// Called before `operation` is made; throwing makes it fail with that error.
  func willPerform(_ operation: StateFileOperation) throws(Errno)
}

extension StateFolder {
  /// Why a second server may not use a state folder.
  public struct InUse: Error, CustomStringConvertible {
    public let folder: String
    public let pid: String

    public var description: String {
      "the state folder \(folder) is in use by another netmodel (pid \(pid)); connect to that server's socket, or start this one with another --state-dir"
    }
  }

  /// Makes this process the folder's only user for as long as it runs: two servers
  /// writing the same outbox and follows would lose each other's intents. The lock
  /// file holds the owner's pid, for the message the next one gets: only digits are
  /// taken from it, since anyone who can write the folder could put anything there.
  ///
  /// The pid is written over the last owner's, then the file cut to its length, not
  /// cut to nothing first: ext4 flushes a file cut to nothing and rewritten when it is
  /// closed (`auto_da_alloc`), and frees and allocates its block again, a journal
  /// transaction at every start on disk.
  public func lockExclusively() throws -> FileDescriptor {
    let lock = try open("lock", .readWrite, options: [.create])
    guard try lock.tryLockExclusive() else {
      let owner = (try? lock.readToEnd(atMost: 20)) ?? []
      lock.close()
      let digits = !owner.isEmpty && owner.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
      throw InUse(folder: path, pid: digits ? String(decoding: owner, as: UTF8.self) : "?")
    }
    let pid = Array(String(Process.id).utf8)
    try? lock.seek(toOffset: 0)
    try lock.writeAll(pid)
    if (try? lock.fileSize()) != pid.count { try? lock.truncate(toSize: pid.count) }
    return lock
  }
}
