import EventLoop
import JSON
import Posix

/// The durable `IntentLog`: an append-only file `<state folder>/outbox.log`, one JSON
/// line per recorded change of an entity's wanted state:
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
/// `record` only buffers. `commit()` writes everything buffered with one `write` and
/// one `fsync` (group commit); the service calls it once per loop iteration, before
/// that iteration's replies are flushed, so a reply is never seen before its intent
/// is on disk. When the commit fails (a full disk), its records are taken back: the
/// file is cut back to its last durable length, the intents go back to what is on
/// disk, and the caller learns which ones, to answer their mutations with an error.
///
/// On start the log is replayed (the last line per entity wins, settled entities
/// drop out, an incomplete or unreadable line is skipped) and, unless it holds
/// exactly the live intents already, rewritten atomically with only those. It is
/// compacted the same way whenever it grows past max(1000, 4 × live intents) lines.
///
/// All methods must be called on the loop's thread.
public final class Outbox: IntentLog {
  public static let fileName = "outbox.log"
  /// Compaction starts once the log has more lines than
  /// max(`compactionMinimumLines`, `compactionFactor` × live intents).
  public static let compactionMinimumLines = 1000
  public static let compactionFactor = 4

  private let loop: EventLoop
  public let folder: StateFolder
  private var fd: FileDescriptor?
  /// The length of the file up to the last durable record.
  private var durableSize = 0

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
  /// For each slot recorded since the last durable commit, its intent on disk (nil:
  /// none): what a failed commit goes back to.
  private var onDisk: [Slot: Bool?] = [:]

  /// Encoded lines recorded since the last successful commit.
  private var buffer: [UInt8] = []
  private var bufferedLines = 0
  /// A failed write may have left part of a line at the end of the file: the next
  /// commit starts with a newline, so that fragment stays a line of its own (skipped
  /// on replay) instead of spoiling the next record.
  private var mayHaveTornTail = false
  /// A failed commit whose lines could not be cut off (the truncation or its fsync
  /// failed too) may have left them complete in the file, where the next successful
  /// fsync would make them durable although their mutations were answered with an
  /// error. The next commit first writes each such slot's intent on disk again (nil:
  /// a settled line), so those lines can never win on replay.
  private var repairs: [Slot: Bool?] = [:]

  /// Complete lines in the file now.
  public private(set) var lineCount = 0
  /// Successful commits (one write and one fsync each) since start.
  public private(set) var commitCount = 0
  /// Compactions since start, including one at start.
  public private(set) var compactionCount = 0
  /// The failure of the last commit or compaction, nil once one succeeds.
  public private(set) var lastError: Errno?

  /// Opens (creating when needed) the outbox in `folder` and replays it; records are
  /// made in `environment` (nil: lines name none). Throws when the file cannot be
  /// read, rewritten or opened for appending.
  public init(loop: EventLoop, folder: StateFolder, environment: String? = nil) throws(Errno) {
    self.loop = loop
    self.folder = folder
    self.environment = environment
    folder.removeStaleTemporaries()
    guard let existing = try folder.read(Outbox.fileName) else {
      // First start: an empty log, made durable by syncing the folder that names it.
      fd = try folder.open(Outbox.fileName, .writeOnly, options: [.create, .append])
      try folder.syncFolder()
      return
    }
    let replay = Outbox.replay(existing, environment: environment)
    live = replay.live
    nextSequence = UInt64(replay.lines)
    lineCount = replay.lines
    if replay.skipped > 0 {
      Log.warn("\(folder.file(Outbox.fileName)): skipped \(replay.skipped) unreadable line(s)")
    }
    if replay.tornTail {
      Log.info("\(folder.file(Outbox.fileName)): ignored an incomplete last line (the last run stopped mid-write)")
    }
    // Already compact (one line per live intent, nothing to skip): keep it, which
    // saves two fsyncs on every start.
    // Untagged lines are rewritten with this start's environment, which they belong
    // to: a later start in another one must not take them for its own.
    let isCompact = replay.skipped == 0 && !replay.tornTail && replay.lines == live.count && replay.untagged == 0
    if !isCompact { try compact() }
    // compact() reopened the log; otherwise open it for appending now.
    if fd == nil { try openForAppending() }
  }

  private func openForAppending() throws(Errno) {
    let opened = try folder.open(Outbox.fileName, .writeOnly, options: [.append])
    do {
      durableSize = try opened.fileSize()
    } catch {
      opened.close()
      throw error
    }
    fd = opened
  }

  deinit { fd?.close() }

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
    Outbox.appendLine(slot, wanted: wanted, to: &buffer)
    bufferedLines += 1
  }

  /// Unsettled intents of the active environment in the order they were last
  /// changed. Right after start, that is what was pending when the process last stopped.
  public func unsettledIntents() -> [(EntityKey, Bool)] {
    live.filter { $0.key.environment == environment }.sorted { $0.value.sequence < $1.value.sequence }
      .map { ($0.key.key, $0.value.wanted) }
  }

  /// Unsettled intents, every environment's.
  public var count: Int { live.count }

  /// Makes `name` the environment that records are made in and intents are listed
  /// for; the intents of the others stay in the log, waiting for theirs.
  public func switchEnvironment(to name: String) {
    environment = name
  }

  // MARK: Group commit

  /// Whether records wait for `commit()`.
  public var needsCommit: Bool { bufferedLines > 0 }

  /// Intents a failed commit took back: each entity's intent is again the one on
  /// disk (`durable`, nil for none), in the environment it was recorded in.
  public struct Unsaved: Error {
    public var error: Errno
    public var intents: [(key: EntityKey, durable: Bool?)]
  }

  /// Makes every record since the last commit durable with one write and one fsync,
  /// then compacts when the log has grown too long; returns whether everything
  /// recorded is durable now. See `commitOrTakeBack()` for a failure.
  @discardableResult
  public func commit() -> Bool {
    if case .failure = commitOrTakeBack() { return false }
    return true
  }

  /// As `commit()`; when the write fails (a full disk, a file size limit), nothing of
  /// it counts: the file is cut back to its durable length, the records are dropped,
  /// every new intent among them goes back to the one on disk, and the failure lists
  /// those of the active environment, whose mutations must not be acknowledged.
  /// Settlements that were not saved are simply replayed once more after a crash.
  public func commitOrTakeBack() -> Result<Void, Unsaved> {
    guard bufferedLines > 0 else { return .success(()) }
    do throws(Errno) {
      guard let fd = self.fd, folder.isLinked(fd) else {
        // No descriptor (a failed reopen after compaction), or the log lost its name
        // (removed, or the state folder deleted while running): appending would
        // acknowledge intents no start reads. Write every live intent, these records
        // included, to a new log instead; without a folder that fails, and the
        // mutations are answered with an error. (Before, such commits were acknowledged and lost.)
        self.fd?.close()
        self.fd = nil
        try compact()
        commitCount += 1
        return .success(())
      }
      var bytes: [UInt8] = []
      if mayHaveTornTail { bytes.append(UInt8(ascii: "\n")) }
      for (slot, wanted) in repairs { Outbox.appendLine(slot, wanted: wanted, to: &bytes) }
      bytes += buffer
      mayHaveTornTail = true
      try folder.write(bytes, to: fd, Outbox.fileName)
      try folder.sync(fd, Outbox.fileName)
      mayHaveTornTail = false
      durableSize += bytes.count
    } catch {
      lastError = error
      Log.error("outbox: could not save \(bufferedLines) intent(s), answering their mutations with an error: \(error)")
      return .failure(takeBack(error))
    }
    lineCount += bufferedLines + repairs.count
    repairs.removeAll()
    commitCount += 1
    buffer.removeAll(keepingCapacity: buffer.count <= 64 * 1024)
    bufferedLines = 0
    onDisk.removeAll()
    lastError = nil
    if lineCount > max(Outbox.compactionMinimumLines, Outbox.compactionFactor * live.count) {
      do {
        try compact()
      } catch {
        // The appended log is still correct, only long: try again after later commits.
        lastError = error
        Log.error("outbox: could not compact: \(error)")
      }
    }
    return .success(())
  }

  private func takeBack(_ error: Errno) -> Unsaved {
    // A partial write may have left whole lines of intents nobody was told about:
    // shrinking needs no space, so cut them off. If even that fails, the next commit
    // starts on a fresh line, and the next compaction drops what is left.
    let cutOff =
      if let fd, (try? folder.truncate(fd, Outbox.fileName, toSize: durableSize)) != nil,
        (try? folder.sync(fd, Outbox.fileName)) != nil
      {
        true
      } else {
        false
      }
    if cutOff { mayHaveTornTail = false }
    var unsaved: [(key: EntityKey, durable: Bool?)] = []
    for (slot, durable) in onDisk {
      guard let now = live[slot] else { continue }  // a settlement: replayed once more at worst
      if !cutOff && repairs.index(forKey: slot) == nil { repairs[slot] = durable }
      if let durable {
        if now.wanted != durable { live[slot] = (durable, nextSequence) }
        nextSequence += 1
      } else {
        live[slot] = nil
      }
      if slot.environment == environment { unsaved.append((slot.key, durable)) }
    }
    onDisk.removeAll()
    buffer.removeAll()
    bufferedLines = 0
    return Unsaved(error: error, intents: unsaved.sorted { ($0.key.kind, $0.key.id) < ($1.key.kind, $1.key.id) })
  }

  /// Rewrites the log atomically with one line per live intent (every environment's),
  /// and appends to the new file from then on. Records not yet committed are made
  /// durable by it too.
  public func compact() throws(Errno) {
    var bytes: [UInt8] = []
    let slots = live.sorted { $0.value.sequence < $1.value.sequence }
    for (slot, intent) in slots { Outbox.appendLine(slot, wanted: intent.wanted, to: &bytes) }
    try folder.replace(Outbox.fileName, with: bytes)
    // The old descriptor points at the replaced file: appends must go to the new one.
    fd?.close()
    fd = nil
    buffer.removeAll()
    bufferedLines = 0
    onDisk.removeAll()
    mayHaveTornTail = false
    repairs.removeAll()
    lineCount = slots.count
    compactionCount += 1
    lastError = nil
    try openForAppending()
  }

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
    var live: [Slot: (wanted: Bool, sequence: UInt64)] = [:]
    /// Complete lines (ending in a newline), blank ones excluded.
    var lines = 0
    /// Complete lines that were not a record.
    var skipped = 0
    /// Whether the file ended in a line without its newline or unreadable.
    var tornTail = false
    /// Records that name no environment although the log now has one.
    var untagged = 0
  }

  /// Reads a log; lines that name no environment belong to `environment`.
  static func replay(_ bytes: [UInt8], environment: String? = nil) -> Replay {
    var result = Replay()
    var start = 0
    var lastWasBad = false
    while start < bytes.count {
      guard let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
        // No newline: the write of this line never finished, so its commit never
        // returned and no reply promised it.
        result.tornTail = true
        lastWasBad = false
        break
      }
      defer { start = newline + 1 }
      if newline == start { continue }
      result.lines += 1
      let record = bytes[start..<newline].withUnsafeBytes { parseLine($0) }
      guard let (key, lineEnvironment, wanted) = record else {
        result.skipped += 1
        lastWasBad = true
        continue
      }
      lastWasBad = false
      if lineEnvironment == nil && environment != nil { result.untagged += 1 }
      let slot = Slot(environment: lineEnvironment ?? environment, key: key)
      if let wanted {
        result.live[slot] = (wanted, UInt64(result.lines - 1))
      } else {
        result.live[slot] = nil
      }
    }
    // An unreadable last line is a torn write too, not something to warn about.
    if lastWasBad {
      result.skipped -= 1
      result.tornTail = true
    }
    return result
  }

  static func parseLine(_ bytes: UnsafeRawBufferPointer) -> (EntityKey, String?, Bool?)? {
    guard let object = try? JSON.parse(bytes), object.isObject,
      let kind = object["k"]?.string, let id = object["i"]?.string, let w = object["w"]
    else { return nil }
    let environment = object["e"]?.string
    if object["e"] != nil && environment == nil { return nil }
    if w.isNull { return (EntityKey(kind: kind, id: id), environment, nil) }
    guard let wanted = w.bool else { return nil }
    return (EntityKey(kind: kind, id: id), environment, wanted)
  }
}
