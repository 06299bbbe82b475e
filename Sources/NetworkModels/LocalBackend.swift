import EventLoop
import JSON
import Posix

/// The embedded default backend: the set of followed entities, in memory and in two
/// files of the state folder:
///
/// - `local-follows.json`, the snapshot
///   (`{"version":1,"follows":{"artist":["banksy",…]}}`, kinds and ids sorted);
/// - `local-follows.log`, the journal: one JSON line per change made since the
///   snapshot was written, oldest first:
///
///       {"k":"artist","i":"banksy","f":true}
///       {"k":"artist","i":"adele","f":false}
///
/// The state is the snapshot with the journal's lines applied in order. Each line
/// sets one entity's state (it does not toggle it), so the last line about an entity
/// wins whatever came before it.
///
/// A follow or unfollow is confirmed once it is durable. Writes are group-committed:
/// every change made in one loop iteration is appended to the journal with one
/// `write` and one `fsync` on the next iteration, and only then are their
/// completions called. A save costs in proportion to its changes, not to the number
/// of follows. Once the journal has more than max(1000, 2 × follows) lines, the
/// snapshot is rewritten (replaced atomically) and the journal emptied, which keeps
/// the cost of all writes together linear in the number of changes. Reads answer from
/// memory; a read that arrives while a save is due answers after it, so no answer
/// ever shows a state that might not survive.
///
/// Any kind is accepted. All methods must be called on the loop's thread.
public final class LocalBackend: ModelBackend {
  public static let fileName = "local-follows.json"
  public static let journalName = "local-follows.log"
  static let formatVersion: Int64 = 1
  /// Compaction starts once the journal has more lines than
  /// max(`compactionMinimumLines`, `compactionFactor` × follows).
  public static let compactionMinimumLines = 1000
  public static let compactionFactor = 2

  private let loop: EventLoop
  public let folder: StateFolder
  /// kind → followed ids, as callers see it now.
  private var follows: [String: Set<String>] = [:]
  /// The effective changes of this iteration, in call order: what the next save
  /// appends, and what a failed save undoes (in reverse order).
  private var changes: [(key: EntityKey, following: Bool)] = []
  private var saveScheduled = false
  /// Completions waiting for the next save, in call order.
  private var waiting: [() -> Void] = []

  /// Complete lines in the journal (as far as this process knows).
  public private(set) var journalLines = 0
  /// A failed append may have left part of a line at the end of the journal: the next
  /// append starts with a newline, so that fragment stays a line of its own (skipped
  /// on load) instead of spoiling the next one.
  private var mayHaveTornTail = false
  /// A failed append may also have left some of its lines complete (a short write, or
  /// a failed fsync after a full one) although its changes were undone in memory. The
  /// next append (or compaction) first puts back the state of every entity such a
  /// failure touched, so those lines can never win on load.
  private var repairs: [(key: EntityKey, following: Bool)] = []
  /// After a failed compaction, the journal length at which the next one is tried:
  /// retrying after every save would make each one cost O(follows).
  private var compactionRetryLines = 0

  /// Journal appends (one write and one fsync each) since start.
  public private(set) var saveCount = 0
  /// Snapshot rewrites followed by an emptied journal since start, the one at start
  /// included.
  public private(set) var compactionCount = 0
  /// Bytes appended to the journal since start (for tests and stats).
  public private(set) var journalBytesWritten = 0
  /// Bytes of snapshots written since start (for tests and stats).
  public private(set) var snapshotBytesWritten = 0
  /// Number of followed entities, all kinds together.
  public private(set) var followCount = 0

  /// Loads the follows saved in `folder`: the snapshot, then the journal. A snapshot
  /// that cannot be understood is kept as `local-follows.json.corrupt-<n>` and only
  /// the journal's changes are kept; the error is logged, never fatal. In the
  /// journal, an incomplete last line (a write the last run did not finish, never
  /// confirmed) is ignored and an unreadable line before it is skipped with a
  /// warning. A non-empty journal is then compacted, so the snapshot alone shows
  /// everything after a start; when that fails the error is logged and the journal
  /// is simply kept. Throws only when a file cannot be read or moved at all
  /// (permissions, I/O errors), since starting without it would lose follows.
  public init(loop: EventLoop, folder: StateFolder) throws(Errno) {
    self.loop = loop
    self.folder = folder
    folder.removeStaleTemporaries()
    var snapshotProblem: String?
    if let bytes = try folder.read(LocalBackend.fileName) {
      switch LocalBackend.decode(bytes) {
      case .success(let loaded):
        follows = loaded
        followCount = loaded.values.reduce(0) { $0 + $1.count }
      case .failure(let problem):
        let aside = try folder.moveAside(LocalBackend.fileName, suffix: "corrupt")
        snapshotProblem =
          "\(folder.file(LocalBackend.fileName)) could not be read (\(problem.message)); kept as \(aside)"
      }
    }
    let journal = try folder.read(LocalBackend.journalName)
    if let snapshotProblem {
      let start =
        journal?.isEmpty == false
        ? "starting with the changes of \(LocalBackend.journalName) only" : "starting with no follows"
      Log.warn("\(snapshotProblem), \(start)")
    }
    guard let journal else {
      // First start: an empty journal, made durable by syncing the folder that names
      // it, so that saves need one fsync only. When it cannot be made now, the first
      // save tries again.
      do {
        try createJournal().close()
      } catch {
        Log.warn("\(folder.file(LocalBackend.journalName)) could not be created: \(error)")
      }
      return
    }
    let replay = LocalBackend.replay(journal) { key, following in apply(key, following) }
    journalLines = replay.lines
    if replay.skipped > 0 {
      Log.warn("\(folder.file(LocalBackend.journalName)): skipped \(replay.skipped) unreadable line(s)")
    }
    if replay.tornTail {
      Log.info(
        "\(folder.file(LocalBackend.journalName)): ignored an incomplete last line (the last run stopped mid-write)")
      // An unfinished line with no newline would glue itself to the next append: that
      // starts with a newline, and first puts back the state the line is about, in
      // case the newline completes it into a readable line.
      mayHaveTornTail = true
      if let unfinished = replay.unfinished { repairs.append((unfinished.key, isFollowing(unfinished.key))) }
    }
    guard !journal.isEmpty else { return }
    do {
      try compact()
    } catch {
      Log.error("could not compact follows at start (the journal is kept and still used): \(error)")
      compactionRetryLines = journalLines + compactionThreshold
    }
  }

  // MARK: ModelBackend

  public func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<Bool, FollowFailure>) -> Void
  ) {
    if apply(key, following) { changes.append((key, following)) }
    // Even an unchanged state waits for the save: an earlier call of this iteration
    // may have made it, and it is confirmed only once it is durable.
    waiting.append { [self] in
      if let failure = self.lastSaveFailure {
        completion(.failure(failure))
      } else {
        completion(.success(following))
      }
    }
    scheduleSave()
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<Bool, FollowFailure>) -> Void) {
    answer { [self] in
      isFollowing(key)
    } deliver: {
      completion(.success($0))
    }
  }

  public var capabilities: BackendCapabilities {
    BackendCapabilities(lists: FollowingLists(loop: loop, followed: followed))
  }

  /// Every followed entity of `kind`, for the `following/<kind>` list.
  public func followed(kind: String, completion: @escaping (Result<[EntityKey], FollowFailure>) -> Void) {
    answer { [self] in
      (follows[kind] ?? []).sorted().map { EntityKey(kind: kind, id: $0) }
    } deliver: {
      completion(.success($0))
    }
  }

  /// Whether `key` is followed now (synchronous; for tests and the service's stats).
  public func isFollowing(_ key: EntityKey) -> Bool { follows[key.kind]?.contains(key.id) ?? false }

  /// Sets `key`'s state in memory; returns whether it changed.
  @discardableResult
  private func apply(_ key: EntityKey, _ following: Bool) -> Bool {
    if following {
      guard follows[key.kind, default: []].insert(key.id).inserted else { return false }
      followCount += 1
    } else {
      guard follows[key.kind]?.remove(key.id) != nil else { return false }
      if follows[key.kind]!.isEmpty { follows[key.kind] = nil }
      followCount -= 1
    }
    return true
  }

  // MARK: Saving

  /// Set while the completions of a failed save run.
  private var lastSaveFailure: FollowFailure?

  /// Answers a read on a later iteration, always with durable state: when a save is
  /// due, the state is read after it; otherwise it is read now (nothing is unsaved),
  /// so a change made later in this iteration cannot leak into the answer.
  private func answer<T>(_ read: @escaping () -> T, deliver: @escaping (T) -> Void) {
    if saveScheduled {
      waiting.append { deliver(read()) }
    } else {
      let value = read()
      loop.execute { deliver(value) }
    }
  }

  private func scheduleSave() {
    guard !saveScheduled else { return }
    saveScheduled = true
    // Strong capture: a backend dropped with a save due still saves and answers.
    loop.execute { self.saveNow() }
  }

  /// Appends this iteration's changes to the journal once if there are any (and
  /// compacts when the journal has grown too long), then calls every completion that
  /// waited for it. Calls made by those completions wait for the next save.
  private func saveNow() {
    saveScheduled = false
    let batch = waiting
    waiting.removeAll()
    if !changes.isEmpty {
      do {
        try appendToJournal(changes)
        changes.removeAll(keepingCapacity: changes.count <= 4096)
        compactIfDue()
      } catch {
        // Nothing of this iteration is durable: undo exactly its changes, newest
        // first, and fail the mutations as retryable.
        Log.error("could not save follows: \(error)")
        for change in changes.reversed() { apply(change.key, !change.following) }
        var repaired = Set<EntityKey>()
        for change in changes where repaired.insert(change.key).inserted {
          repairs.append((change.key, isFollowing(change.key)))
        }
        changes.removeAll()
        lastSaveFailure = FollowFailure(.unavailable, "could not save follows: \(error)")
      }
    }
    for body in batch { body() }
    lastSaveFailure = nil
  }

  /// Appends `changes` (after any pending repairs) with one write and one fsync.
  private func appendToJournal(_ changes: [(key: EntityKey, following: Bool)]) throws(Errno) {
    var bytes: [UInt8] = []
    bytes.reserveCapacity((repairs.count + changes.count) * 48 + 1)
    if mayHaveTornTail { bytes.append(UInt8(ascii: "\n")) }
    for repair in repairs { LocalBackend.appendLine(repair.key, repair.following, to: &bytes) }
    for change in changes { LocalBackend.appendLine(change.key, change.following, to: &bytes) }
    // Set before anything can fail: a failed write may leave a fragment, and after any
    // failure the next append simply starts on a fresh line (a blank line is skipped).
    mayHaveTornTail = true
    // Opened for each save: one open and close cost little next to the fsync, and a
    // journal that was removed or replaced makes the save fail instead of going to a
    // file no one reads.
    if !folder.exists(LocalBackend.journalName) && (followCount > 0 || journalLines > 0 || compactionCount > 0) {
      // The journal is gone (the state folder was deleted, or emptied, while running):
      // a new journal alone would lose every follow confirmed before. Write the
      // snapshot of the durable state first; without a folder that fails, and the
      // changes are answered with an error.
      try compact()
    }
    let fd = try openJournal()
    defer { fd.close() }
    do {
      try folder.write(bytes, to: fd, LocalBackend.journalName)
      try folder.sync(fd, LocalBackend.journalName)
    } catch {
      throw Errno(error.code, call: "\(error.call) \(folder.file(LocalBackend.journalName))")
    }
    mayHaveTornTail = false
    journalLines += repairs.count + changes.count
    journalBytesWritten += bytes.count
    repairs.removeAll()
    saveCount += 1
  }

  private var compactionThreshold: Int {
    max(LocalBackend.compactionMinimumLines, LocalBackend.compactionFactor * followCount)
  }

  private func compactIfDue() {
    guard journalLines > max(compactionThreshold, compactionRetryLines) else { return }
    do {
      try compact()
    } catch {
      // The journal is still correct, only long: try again once it has grown as much
      // again, so a compaction that keeps failing costs no more than one that works.
      Log.error("could not compact follows (the journal is kept and still used): \(error)")
      compactionRetryLines = journalLines + compactionThreshold
    }
  }

  /// Rewrites the snapshot with the durable state and empties the journal. The
  /// service calls it on a clean shutdown, so the next start reads the snapshot only.
  /// Changes of the current iteration are not included: they are not durable until
  /// their save, which appends them to the (then empty) journal as usual.
  ///
  /// Crash safety: the snapshot is replaced first (atomically), then the journal is
  /// truncated (and synced). A crash between the two leaves the new snapshot with
  /// the old journal, whose replay over it is harmless: every line sets an entity's
  /// state rather than toggling it, and the snapshot is the result of those very
  /// lines, so for each entity the journal mentions its last line sets the state the
  /// snapshot already holds, and entities it does not mention keep the snapshot's.
  /// A crash before the replace leaves the old snapshot and the full journal; after
  /// the truncation, the new snapshot alone. (Stray lines of a failed append are undone
  /// by the repairs the next append writes first; the repairs are dropped only once
  /// the journal is empty, so they are never lost while those lines exist.)
  public func compact() throws(Errno) {
    let durable: [String: Set<String>]
    if changes.isEmpty {
      durable = follows
    } else {
      // Rare (a compaction called between a change and its save): leave out what is
      // not durable yet. This copy costs O(follows), as the snapshot does anyway.
      let current = (follows, followCount)
      for change in changes.reversed() { apply(change.key, !change.following) }
      durable = follows
      (follows, followCount) = current
    }
    let snapshot = LocalBackend.encode(durable)
    try folder.replace(LocalBackend.fileName, with: snapshot)
    snapshotBytesWritten += snapshot.count
    let journal = try openJournal(truncating: true)
    defer { journal.close() }
    do {
      try folder.sync(journal, LocalBackend.journalName)
    } catch {
      throw Errno(error.code, call: "\(error.call) \(folder.file(LocalBackend.journalName))")
    }
    journalLines = 0
    mayHaveTornTail = false
    repairs.removeAll()
    compactionRetryLines = 0
    compactionCount += 1
  }

  /// Opens the journal for appending (or, with `truncating`, empties it: the
  /// `O_TRUNC` of open does what `ftruncate(fd, 0)` would); creates it when missing.
  private func openJournal(truncating: Bool = false) throws(Errno) -> FileDescriptor {
    do {
      return try folder.open(
        LocalBackend.journalName, .writeOnly, options: truncating ? [.append, .truncate] : [.append])
    } catch  where error.code == Errno.noEntry {
      return try createJournal()
    }
  }

  /// Creates the journal (or opens it if it exists) and syncs the folder, so the file
  /// survives a crash as soon as its content does.
  private func createJournal() throws(Errno) -> FileDescriptor {
    let fd = try folder.open(LocalBackend.journalName, .writeOnly, options: [.create, .append])
    do {
      try folder.syncFolder()
    } catch {
      fd.close()
      throw error
    }
    return fd
  }

  // MARK: File format

  struct FormatProblem: Error {
    let message: String
  }

  static func encode(_ follows: [String: Set<String>]) -> [UInt8] {
    let byKind = JSON.object()
    for kind in follows.keys.sorted() {
      guard let ids = follows[kind], !ids.isEmpty else { continue }
      let array = JSON.array()
      for id in ids.sorted() { array.append(.string(id)) }
      byKind.set(kind, array)
    }
    var bytes = JSON.object().set("version", .integer(formatVersion)).set("follows", byKind).encoded()
    bytes.append(UInt8(ascii: "\n"))
    return bytes
  }

  static func decode(_ bytes: [UInt8]) -> Result<[String: Set<String>], FormatProblem> {
    let document: JSON
    do {
      document = try JSON.parse(bytes)
    } catch {
      return .failure(FormatProblem(message: "not JSON: \(error)"))
    }
    guard document.isObject else { return .failure(FormatProblem(message: "not a JSON object")) }
    guard let version = document["version"]?.integer else {
      return .failure(FormatProblem(message: "no integer \"version\""))
    }
    guard version == formatVersion else {
      return .failure(FormatProblem(message: "version \(version), this program reads version \(formatVersion)"))
    }
    guard let byKind = document["follows"], byKind.isObject else {
      return .failure(FormatProblem(message: "no \"follows\" object"))
    }
    var result: [String: Set<String>] = [:]
    for (kind, ids) in byKind.members {
      guard ids.isArray else { return .failure(FormatProblem(message: "follows of \"\(kind)\" is not an array")) }
      var set = Set<String>()
      for element in ids.elements {
        guard let id = element.string, !id.isEmpty else {
          return .failure(FormatProblem(message: "follows of \"\(kind)\" holds \(element.text), not an id"))
        }
        set.insert(id)
      }
      if !set.isEmpty { result[kind] = set }
    }
    return .success(result)
  }

  static func appendLine(_ key: EntityKey, _ following: Bool, to buffer: inout [UInt8]) {
    buffer.append(contentsOf: #"{"k":"#.utf8)
    appendJSONString(key.kind, to: &buffer)
    buffer.append(contentsOf: #","i":"#.utf8)
    appendJSONString(key.id, to: &buffer)
    buffer.append(contentsOf: following ? #","f":true}"#.utf8 : #","f":false}"#.utf8)
    buffer.append(UInt8(ascii: "\n"))
  }

  struct Replay {
    /// Complete lines (ending in a newline), blank ones excluded.
    var lines = 0
    /// Complete lines before the last one that were not a change.
    var skipped = 0
    /// Whether the file ended in a line without its newline, or an unreadable one.
    var tornTail = false
    /// The change an unfinished last line (no newline) would make if it were
    /// completed: the newline the next append starts with completes it.
    var unfinished: (key: EntityKey, following: Bool)?
  }

  /// Reads a journal, calling `apply` with each readable line's change in file order.
  static func replay(_ bytes: [UInt8], apply: (EntityKey, Bool) -> Void) -> Replay {
    var result = Replay()
    var start = 0
    var lastWasBad = false
    while start < bytes.count {
      guard let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
        // No newline: the write of this line never finished, so its save never
        // returned and no completion confirmed it.
        result.tornTail = true
        result.unfinished = bytes[start...].withUnsafeBytes { parseLine($0) }
        lastWasBad = false
        break
      }
      defer { start = newline + 1 }
      if newline == start { continue }
      result.lines += 1
      guard let change = bytes[start..<newline].withUnsafeBytes({ parseLine($0) }) else {
        result.skipped += 1
        lastWasBad = true
        continue
      }
      lastWasBad = false
      apply(change.key, change.following)
    }
    // An unreadable last line is a torn write too, not something to warn about.
    if lastWasBad {
      result.skipped -= 1
      result.tornTail = true
    }
    return result
  }

  static func parseLine(_ bytes: UnsafeRawBufferPointer) -> (key: EntityKey, following: Bool)? {
    guard let object = try? JSONScanner.scanObjectMembers(bytes),
      let kind = object["k"]?.stringValue, let id = object["i"]?.stringValue, let following = object["f"]?.boolValue
    else { return nil }
    return (EntityKey(kind: kind, id: id), following)
  }
}
