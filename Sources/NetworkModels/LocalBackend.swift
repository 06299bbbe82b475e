import EventLoop
import JSON
import Posix

/// The embedded default backend: the set of followed entities, in memory and in the
/// state folder's journal (`Journal`), one JSON line per change, oldest first:
///
///     {"k":"artist","i":"banksy","f":true}
///     {"k":"artist","i":"adele","f":false}
///
/// Each line sets one entity's state (it does not toggle it), so the last line about
/// an entity wins whatever came before it; a compaction writes one line per follow.
///
/// A follow or unfollow is confirmed once it is durable. Writes are group-committed:
/// every change made in one loop iteration goes into the journal's next commit (the
/// service's, at the end of the iteration, which also holds the outbox's intents; or,
/// without one, a commit on the next iteration), and only then are their completions
/// called. Reads answer from memory; a read that arrives while a change waits for its
/// commit answers after it, so no answer ever shows a state that might not survive.
///
/// Follows of an earlier version (the snapshot `local-follows.json`,
/// `{"version":1,"follows":{"artist":["banksy",…]}}`, and the journal
/// `local-follows.log` of the lines above) are read at start and replaced by the
/// journal at its first compaction.
///
/// Any kind is accepted. All methods must be called on the loop's thread.
public final class LocalBackend: ModelBackend {
  /// The snapshot and journal of versions before the shared journal, read at start.
  public static let legacySnapshotName = "local-follows.json"
  public static let legacyJournalName = "local-follows.log"
  static let formatVersion: Int64 = 1

  private let loop: EventLoop
  public let journal: Journal
  public var folder: StateFolder { journal.folder }
  /// kind → followed ids, as callers see it now; by bytes, as the ids' owners tell
  /// them apart (`ExactString`).
  private var follows: [ExactString: Set<ExactString>] = [:]
  /// The changes recorded since the last commit, in call order: what a failed commit
  /// undoes (in reverse order).
  private var changes: [(key: EntityKey, following: Bool)] = []
  /// Whether a commit is queued for the next iteration.
  private var commitQueued = false
  /// Completions waiting for the next commit, in call order.
  private var waiting: [() -> Void] = []
  /// Set while the completions of a failed commit run.
  private var lastSaveFailure: FollowFailure?

  /// Commits of the journal with an fsync since start.
  public var saveCount: Int { journal.syncedCommitCount }
  /// Compactions of the journal since start.
  public var compactionCount: Int { journal.compactionCount }
  /// Lines in the journal now (every part's).
  public var journalLines: Int { journal.lineCount }
  /// Number of followed entities, all kinds together.
  public private(set) var followCount = 0

  /// Opens the journal in `folder` for the local backend alone; see `init(loop:journal:)`.
  public convenience init(loop: EventLoop, folder: StateFolder) throws(Errno) {
    try self.init(loop: loop, journal: Journal(folder: folder))
  }

  /// Loads the follows of `journal`, after those of an earlier version when there are
  /// any: the snapshot, then its journal. A snapshot that cannot be understood is
  /// kept as `local-follows.json.corrupt-<n>` and only the journal's changes are kept;
  /// the error is logged, never fatal. Throws only when a file cannot be read or
  /// moved at all (permissions, I/O errors), since starting without it would lose
  /// follows.
  public init(loop: EventLoop, journal: Journal) throws(Errno) {
    self.loop = loop
    self.journal = journal
    var legacy: [String] = []
    let folder = journal.folder
    var snapshotProblem: String?
    if let bytes = try folder.read(LocalBackend.legacySnapshotName) {
      switch LocalBackend.decode(bytes) {
      case .success(let loaded):
        legacy.append(LocalBackend.legacySnapshotName)
        for (kind, ids) in loaded { for id in ids { apply(EntityKey(kind: kind.string, id: id.string), true) } }
      case .failure(let problem):
        let aside = try folder.moveAside(LocalBackend.legacySnapshotName, suffix: "corrupt")
        snapshotProblem =
          "\(folder.file(LocalBackend.legacySnapshotName)) could not be read (\(problem.message)); kept as \(aside)"
      }
    }
    let legacyJournal = try folder.read(LocalBackend.legacyJournalName)
    if let snapshotProblem {
      let start =
        legacyJournal?.isEmpty == false
        ? "starting with the changes of \(LocalBackend.legacyJournalName) only" : "starting with no follows"
      Log.warn("\(snapshotProblem), \(start)")
    }
    if let legacyJournal {
      legacy.append(LocalBackend.legacyJournalName)
      var invalid: [InvalidLine] = []
      let replay = LocalBackend.replay(legacyJournal, invalid: &invalid) { key, following in apply(key, following) }
      if replay.skipped > 0 {
        Log.warn("\(folder.file(LocalBackend.legacyJournalName)): skipped \(replay.skipped) unreadable line(s)")
      }
      _ = folder.setAside(invalid, of: LocalBackend.legacyJournalName)
    }
    journal.attach(self, legacyFiles: legacy)
  }

  // MARK: ModelBackend

  public func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    if apply(key, following) {
      changes.append((key, following))
      journal.record(urgent: true) { LocalBackend.appendLine(key, following, to: &$0) }
    }
    // Even an unchanged state waits for the commit: an earlier call of this iteration
    // may have made it, and it is confirmed only once it is durable.
    waiting.append { [self] in
      if let failure = self.lastSaveFailure {
        completion(.failure(failure))
      } else {
        completion(.success(FollowAnswer(following)))
      }
    }
    scheduleCommit()
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    answer { [self] in
      isFollowing(key)
    } deliver: {
      completion(.success(FollowAnswer($0)))
    }
  }

  public var capabilities: BackendCapabilities {
    BackendCapabilities(lists: FollowingLists(loop: loop, followed: followed))
  }

  /// A change is a record of the journal's next commit, undone when that fails.
  public var commitsWithIntents: Bool { true }

  /// Every followed entity of `kind`, for the `following/<kind>` list.
  public func followed(kind: String, completion: @escaping (Result<[EntityKey], FollowFailure>) -> Void) {
    answer { [self] in
      (follows[ExactString(kind)] ?? []).sorted().map { EntityKey(kind: kind, id: $0.string) }
    } deliver: {
      completion(.success($0))
    }
  }

  /// Whether `key` is followed now (synchronous; for tests and the service's stats).
  public func isFollowing(_ key: EntityKey) -> Bool {
    follows[ExactString(key.kind)]?.contains(ExactString(key.id)) ?? false
  }

  /// Sets `key`'s state in memory; returns whether it changed.
  @discardableResult
  private func apply(_ key: EntityKey, _ following: Bool) -> Bool {
    let kind = ExactString(key.kind)
    if following {
      guard follows[kind, default: []].insert(ExactString(key.id)).inserted else { return false }
      followCount += 1
    } else {
      guard follows[kind]?.remove(ExactString(key.id)) != nil else { return false }
      if follows[kind]!.isEmpty { follows[kind] = nil }
      followCount -= 1
    }
    return true
  }

  // MARK: Saving

  /// Answers a read on a later iteration, always with durable state: when a commit is
  /// due, the state is read after it; otherwise it is read now (nothing is unsaved),
  /// so a change made later in this iteration cannot leak into the answer.
  private func answer<T>(_ read: @escaping () -> T, deliver: @escaping (T) -> Void) {
    if !waiting.isEmpty {
      waiting.append { deliver(read()) }
    } else {
      let value = read()
      loop.execute { deliver(value) }
    }
  }

  private func scheduleCommit() {
    guard !commitQueued else { return }
    commitQueued = true
    // Strong capture: a backend dropped with a commit due still commits and answers.
    // Usually the service's commit at the end of this iteration came first, and this
    // one finds only completions of calls that changed nothing to answer.
    loop.execute { [self] in
      commitQueued = false
      if changes.isEmpty { commitEnded() } else { journal.commit() }
    }
  }

  /// Rewrites the journal with the follows (and the other parts' state). The service
  /// calls it on a clean shutdown, so the next start reads one short file. Changes
  /// not yet committed are made durable by it too.
  public func compact() throws(Errno) { try journal.compact() }

  // MARK: File format

  struct FormatProblem: Error {
    let message: String
  }

  static func encode(_ follows: [ExactString: Set<ExactString>]) -> [UInt8] {
    let byKind = JSON.object()
    for kind in follows.keys.sorted() {
      guard let ids = follows[kind], !ids.isEmpty else { continue }
      let array = JSON.array()
      for id in ids.sorted() { array.append(.string(id.string)) }
      byKind.set(kind.string, array)
    }
    var bytes = JSON.object().set("version", .integer(formatVersion)).set("follows", byKind).encoded()
    bytes.append(UInt8(ascii: "\n"))
    return bytes
  }

  static func decode(_ bytes: [UInt8]) -> Result<[ExactString: Set<ExactString>], FormatProblem> {
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
    var result: [ExactString: Set<ExactString>] = [:]
    for (kind, ids) in byKind.members {
      guard ids.isArray else { return .failure(FormatProblem(message: "follows of \"\(kind)\" is not an array")) }
      // What is read passes the checks a request passes.
      guard EntityKey.isValidKind(kind) else {
        return .failure(FormatProblem(message: "follows of a kind outside ^[a-z][a-z0-9_-]{0,63}$"))
      }
      var set = Set<ExactString>()
      for element in ids.elements {
        guard let id = element.string, EntityKey.problem(kind: kind, id: id) == nil else {
          return .failure(FormatProblem(message: "follows of \"\(kind)\" holds \(element.text), not an id"))
        }
        set.insert(ExactString(id))
      }
      if !set.isEmpty { result[ExactString(kind)] = set }
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

  /// Reads a journal, calling `apply` with each readable line's change in file order;
  /// the follow lines a request could not have made go to `invalid`, not applied.
  static func replay(_ bytes: [UInt8], invalid: inout [InvalidLine], apply: (EntityKey, Bool) -> Void) -> JournalLines {
    JournalLines(bytes) { line, number in
      switch line.withUnsafeBytes({ parseLine($0) }) {
      case nil: return false
      case .failure(let problem)?:
        invalid.append(InvalidLine(number: number, bytes: Array(line), reason: problem.reason))
      case .success(let change)?: apply(change.key, change.following)
      }
      return true
    }
  }

  static func parseLine(_ bytes: UnsafeRawBufferPointer) -> Result<(key: EntityKey, following: Bool), RecordProblem>? {
    guard let object = try? JSONScanner.scanObjectMembers(bytes) else { return nil }
    return parseRecord(object)
  }

  /// A follow line (one with `"f"` and no `"w"`), checked as a request is; nil for a
  /// line that is not a follow.
  static func parseRecord(_ object: JSONScanner.ScannedObject) -> Result<
    (key: EntityKey, following: Bool), RecordProblem
  >? {
    guard let f = object["f"], object["w"] == nil else { return nil }
    let key: EntityKey
    switch JournalRecord.key(object) {
    case .failure(let problem): return .failure(problem)
    case .success(let checked): key = checked
    }
    guard let following = f.boolValue else { return .failure(RecordProblem("\"f\" is not true or false")) }
    return .success((key, following))
  }
}

extension LocalBackend: JournalPart {
  public func replay(_ record: JSONScanner.ScannedObject) -> ReplayOutcome {
    switch LocalBackend.parseRecord(record) {
    case nil: return .notThisPart
    case .failure(let problem)?: return .invalid(problem.reason)
    case .success(let change)?:
      apply(change.key, change.following)
      return .replayed
    }
  }

  public func appendState(to bytes: inout [UInt8]) {
    for kind in follows.keys.sorted() {
      for id in follows[kind]!.sorted() {
        LocalBackend.appendLine(EntityKey(kind: kind.string, id: id.string), true, to: &bytes)
      }
    }
  }

  public var stateLines: Int { followCount }

  public func recordsCommitted() { changes.removeAll(keepingCapacity: changes.count <= 4096) }

  public func recordsFailed(_ error: Errno) {
    guard !changes.isEmpty else { return }
    // Nothing of this commit is durable: undo exactly its changes, newest first, and
    // fail the mutations as retryable.
    Log.error("could not save follows: \(error)")
    for change in changes.reversed() { apply(change.key, !change.following) }
    changes.removeAll()
    lastSaveFailure = FollowFailure(.unavailable, "could not save follows: \(error)")
  }

  /// Calls every completion that waited for the commit. Calls made by those
  /// completions wait for the next one.
  public func commitEnded() {
    let batch = waiting
    waiting.removeAll()
    for body in batch { body() }
    lastSaveFailure = nil
  }
}
