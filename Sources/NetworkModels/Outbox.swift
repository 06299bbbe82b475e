import EventLoop
import JSON
import Posix

/// The durable `IntentLog`: the intents' lines of the state folder's journal
/// (`Journal`), one JSON line per recorded change of an entity's wanted state:
///
///     {"k":"artist","i":"banksy","w":true}
///     {"k":"artist","i":"banksy","w":null}      ← settled: no longer replayed
///
/// With environments (the REST backend), each line also names the environment the
/// intent was made in (`"e":"production"`): an intent is sent only while its
/// environment is the active one (`switchEnvironment(to:)`), and waits in the log
/// otherwise. A line without `"e"` (the local backend, or a log from before
/// environments) belongs to the environment of the start that reads it.
///
/// `record` only buffers. The journal's commit writes everything buffered with one
/// `write` and one `fsync` (group commit); the service calls it once per loop
/// iteration, before that iteration's replies are flushed, so a reply is never seen
/// before its intent is on disk. A settlement alone needs no fsync (after a power
/// loss its intent is sent once more, which changes nothing): it is written without
/// one, and made durable by the next commit that has one. When the commit fails (a
/// full disk), its records are taken back: the intents go back to what is on disk, and
/// the caller learns which ones, to answer their mutations with an error.
///
/// On start the lines are replayed (the last line per entity wins, settled entities
/// drop out). An outbox of an earlier version (`outbox.log`, the same lines) is read
/// first, and replaced by the journal at its first compaction.
///
/// All methods must be called on the loop's thread.
public final class Outbox: IntentLog, JournalPart {
  /// The outbox file of versions before the journal, read at start when present.
  public static let legacyFileName = "outbox.log"

  public let journal: Journal
  public var folder: StateFolder { journal.folder }

  /// An intent's place: its entity in the environment it was made in (nil: the log
  /// does not name environments).
  struct Slot: Hashable {
    var environment: String?
    var key: EntityKey
  }

  /// The environment records are made in and intents are listed for.
  public private(set) var environment: String?
  /// Unsettled intents, with the sequence number of their last record: intents are
  /// listed (and compacted) in the order they were last changed.
  private var live: [Slot: (wanted: Bool, sequence: UInt64)] = [:]
  private var nextSequence: UInt64 = 0
  /// For each slot recorded since the last commit, its intent on disk (nil: none):
  /// what a failed commit goes back to.
  private var onDisk: [Slot: Bool?] = [:]
  /// Intents a failed commit took back, until `commitOrTakeBack()` reports them.
  private var takenBack: Unsaved?

  /// Lines in the journal now (every part's).
  public var lineCount: Int { journal.lineCount }
  /// Successful commits with an fsync since start.
  public var commitCount: Int { journal.syncedCommitCount }
  /// Compactions of the journal since start.
  public var compactionCount: Int { journal.compactionCount }

  /// Opens the journal in `folder` for the outbox alone; see `init(journal:environment:)`.
  public convenience init(folder: StateFolder, environment: String? = nil) throws(Errno) {
    try self.init(journal: Journal(folder: folder), environment: environment)
  }

  /// Replays the outbox's lines of `journal` (after an outbox file of an earlier
  /// version, when there is one); records are made in `environment` (nil: lines name
  /// none). Throws when the earlier file cannot be read.
  public init(journal: Journal, environment: String? = nil) throws(Errno) {
    self.journal = journal
    self.environment = environment
    var legacy: [String] = []
    if let bytes = try journal.folder.read(Outbox.legacyFileName) {
      legacy.append(Outbox.legacyFileName)
      let replay = Outbox.replay(bytes, environment: environment)
      live = replay.live
      nextSequence = UInt64(replay.file.lines)
      if replay.file.skipped > 0 {
        Log.warn("\(folder.file(Outbox.legacyFileName)): skipped \(replay.file.skipped) unreadable line(s)")
      }
      _ = journal.folder.setAside(replay.invalid, of: Outbox.legacyFileName)
    }
    journal.attach(self, legacyFiles: legacy)
    // Untagged lines are rewritten with this start's environment, which they belong
    // to: a later start in another one must not take them for its own.
    if untaggedLines > 0 { journal.requestRewrite() }
  }

  /// Lines replayed at start that named no environment although the outbox has one.
  private var untaggedLines = 0

  // MARK: IntentLog

  public func record(_ key: EntityKey, wanted: Bool?) {
    let slot = Slot(environment: environment, key: key)
    let before = live[slot]?.wanted
    if let wanted {
      if before == wanted { return }
      live[slot] = (wanted, nextSequence)
    } else {
      if live.removeValue(forKey: slot) == nil { return }
    }
    if onDisk.index(forKey: slot) == nil { onDisk[slot] = before }
    nextSequence += 1
    journal.record(urgent: wanted != nil) { Outbox.appendLine(slot, wanted: wanted, to: &$0) }
  }

  /// Unsettled intents of the active environment in the order they were last
  /// changed. Right after start, that is what was pending when the process last stopped.
  public func unsettledIntents() -> [(EntityKey, Bool)] {
    live.filter { $0.key.environment == environment }.sorted { $0.value.sequence < $1.value.sequence }
      .map { ($0.key.key, $0.value.wanted) }
  }

  /// Unsettled intents, every environment's.
  public var count: Int { live.count }

  /// The first `limit` unsettled intents of every environment (of `kind` when given) in
  /// the order they were last changed, and how many there are (for `inspect`): the
  /// environment each was made in (nil: the log names none).
  func oldestIntents(kind: String?, limit: Int) -> (
    total: Int, oldest: [(environment: String?, key: EntityKey, wanted: Bool)]
  ) {
    var oldest = SmallestFirst<(sequence: UInt64, slot: Slot, wanted: Bool)>(limit: limit) {
      $0.sequence < $1.sequence
    }
    for (slot, intent) in live where kind.map({ slot.key.kind.hasSameBytes(as: $0) }) ?? true {
      oldest.offer((intent.sequence, slot, intent.wanted))
    }
    return (oldest.offered, oldest.kept.map { ($0.slot.environment, $0.slot.key, $0.wanted) })
  }

  /// Whether an intent for `key` made in `environment` is still unsettled.
  func holdsIntent(environment: String?, key: EntityKey) -> Bool {
    live[Slot(environment: environment, key: key)] != nil
  }

  public func isDurable(_ key: EntityKey) -> Bool {
    onDisk.isEmpty || onDisk.index(forKey: Slot(environment: environment, key: key)) == nil
  }

  /// Makes `name` the environment that records are made in and intents are listed
  /// for; the intents of the others stay in the log, waiting for theirs.
  public func switchEnvironment(to name: String) {
    environment = name
  }

  // MARK: Group commit

  /// Whether records wait for an fsync, or a failure to be reported.
  public var needsCommit: Bool { journal.needsSync || takenBack != nil }

  /// Intents a failed commit took back: each entity's intent is again the one on
  /// disk (`durable`, nil for none), in the environment it was recorded in.
  public struct Unsaved: Error {
    public var error: Errno
    public var intents: [(key: EntityKey, durable: Bool?)]
  }

  /// Makes every record since the last commit durable with one write and one fsync
  /// (settlements alone included); returns whether everything recorded is durable
  /// now. See `commitOrTakeBack()` for a failure.
  @discardableResult
  public func commit() -> Bool {
    journal.commit(sync: true)
    return takenBack.take() == nil
  }

  /// Commits the journal (with an fsync when a record needs one); when that fails (a
  /// full disk, a file size limit, a failed fsync), nothing of it counts: the records
  /// are dropped, every new intent among them goes back to the one on disk, and the
  /// failure lists those of the active environment, whose mutations must not be
  /// acknowledged. Settlements that were not saved are simply replayed once more
  /// after a crash.
  public func commitOrTakeBack() -> Result<Void, Unsaved> {
    journal.commit()
    if let unsaved = takenBack.take() { return .failure(unsaved) }
    return .success(())
  }

  /// Rewrites the journal with one line per live intent (and the other parts'
  /// state); records not yet committed are made durable by it too.
  public func compact() throws(Errno) { try journal.compact() }

  // MARK: JournalPart

  public func replay(_ record: JSONScanner.ScannedObject) -> ReplayOutcome {
    let (key, lineEnvironment, wanted): (EntityKey, String?, Bool?)
    switch Outbox.parseRecord(record) {
    case nil: return .notThisPart
    case .failure(let problem)?: return .invalid(problem.reason)
    case .success(let parsed)?: (key, lineEnvironment, wanted) = parsed
    }
    if lineEnvironment == nil && environment != nil { untaggedLines += 1 }
    let slot = Slot(environment: lineEnvironment ?? environment, key: key)
    if let wanted {
      live[slot] = (wanted, nextSequence)
    } else {
      live[slot] = nil
    }
    nextSequence += 1
    return .replayed
  }

  public func appendState(to bytes: inout [UInt8]) {
    for (slot, intent) in live.sorted(by: { $0.value.sequence < $1.value.sequence }) {
      Outbox.appendLine(slot, wanted: intent.wanted, to: &bytes)
    }
  }

  public var stateLines: Int { live.count }

  public func recordsCommitted() { onDisk.removeAll() }

  public func recordsFailed(_ error: Errno) {
    guard !onDisk.isEmpty else { return }
    var unsaved = takenBack?.intents ?? []
    for (slot, durable) in onDisk {
      guard let now = live[slot] else { continue }  // a settlement: replayed once more at worst
      if let durable {
        if now.wanted != durable { live[slot] = (durable, nextSequence) }
        nextSequence += 1
      } else {
        live[slot] = nil
      }
      if slot.environment == environment { unsaved.append((slot.key, durable)) }
    }
    onDisk.removeAll()
    unsaved.sort { ($0.key.kind, $0.key.id) < ($1.key.kind, $1.key.id) }
    takenBack = Unsaved(error: error, intents: unsaved)
  }

  public func commitEnded() {}

  // MARK: Format

  static func appendLine(_ slot: Slot, wanted: Bool?, to buffer: inout [UInt8]) {
    buffer.append(contentsOf: #"{"k":"#.utf8)
    appendJSONString(slot.key.kind, to: &buffer)
    buffer.append(contentsOf: #","i":"#.utf8)
    appendJSONString(slot.key.id, to: &buffer)
    if let environment = slot.environment {
      buffer.append(contentsOf: #","e":"#.utf8)
      appendJSONString(environment, to: &buffer)
    }
    switch wanted {
    case true?: buffer.append(contentsOf: #","w":true}"#.utf8)
    case false?: buffer.append(contentsOf: #","w":false}"#.utf8)
    case nil: buffer.append(contentsOf: #","w":null}"#.utf8)
    }
    buffer.append(UInt8(ascii: "\n"))
  }

  struct Replay {
    var live: [Slot: (wanted: Bool, sequence: UInt64)]
    var file: JournalLines
    /// Records that name no environment although the log now has one.
    var untagged: Int
    /// Intent lines a request could not have made: not replayed.
    var invalid: [InvalidLine]
  }

  /// Reads a log; lines that name no environment belong to `environment`.
  static func replay(_ bytes: [UInt8], environment: String? = nil) -> Replay {
    var live: [Slot: (wanted: Bool, sequence: UInt64)] = [:]
    var untagged = 0
    var invalid: [InvalidLine] = []
    let file = JournalLines(bytes) { line, number in
      let (key, lineEnvironment, wanted): (EntityKey, String?, Bool?)
      switch line.withUnsafeBytes({ parseLine($0) }) {
      case nil: return false
      case .failure(let problem)?:
        // Read, and kept aside: not an unreadable line, nor a torn tail.
        invalid.append(InvalidLine(number: number, bytes: Array(line), reason: problem.reason))
        return true
      case .success(let parsed)?: (key, lineEnvironment, wanted) = parsed
      }
      if lineEnvironment == nil && environment != nil { untagged += 1 }
      let slot = Slot(environment: lineEnvironment ?? environment, key: key)
      if let wanted {
        live[slot] = (wanted, UInt64(number))
      } else {
        live[slot] = nil
      }
      return true
    }
    return Replay(live: live, file: file, untagged: untagged, invalid: invalid)
  }

  static func parseLine(_ bytes: UnsafeRawBufferPointer) -> Result<(EntityKey, String?, Bool?), RecordProblem>? {
    guard let object = try? JSONScanner.scanObjectMembers(bytes) else { return nil }
    return parseRecord(object)
  }

  /// An intent line (one with `"w"` and no `"f"`), checked as a request is; nil for a
  /// line that is not an intent.
  static func parseRecord(_ object: JSONScanner.ScannedObject) -> Result<(EntityKey, String?, Bool?), RecordProblem>? {
    guard let w = object["w"], object["f"] == nil else { return nil }
    let key: EntityKey
    switch JournalRecord.key(object) {
    case .failure(let problem): return .failure(problem)
    case .success(let checked): key = checked
    }
    var environment: String?
    if let e = object["e"] {
      guard let name = e.stringValue, !name.isEmpty else {
        return .failure(RecordProblem("\"e\" is not an environment name"))
      }
      environment = name
    }
    if w.kind == .null { return .success((key, environment, nil)) }
    guard let wanted = w.boolValue else { return .failure(RecordProblem("\"w\" is not true, false or null")) }
    return .success((key, environment, wanted))
  }
}
