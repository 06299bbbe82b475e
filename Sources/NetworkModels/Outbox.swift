import EventLoop
import JSON
import Posix

/// The durable `IntentLog`: an append-only file `<state folder>/outbox.log`, one JSON
/// line per recorded change of an entity's wanted state:
///
///     {"k":"artist","i":"banksy","w":true}
///     {"k":"artist","i":"banksy","w":null}      ← settled: no longer replayed
///
/// `record` only buffers. `commit()` writes everything buffered with one `write` and
/// one `fsync` (group commit); the service calls it once per loop iteration, before
/// that iteration's replies are flushed, so a reply is never seen before its intent
/// is on disk.
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

  /// Unsettled intents, with the sequence number of their last record: intents are
  /// listed (and compacted) in the order they were last changed.
  private var live: [EntityKey: (wanted: Bool, sequence: UInt64)] = [:]
  private var nextSequence: UInt64 = 0

  /// Encoded lines recorded since the last successful commit.
  private var buffer: [UInt8] = []
  private var bufferedLines = 0
  /// A failed write may have left part of a line at the end of the file: the next
  /// commit starts with a newline, so that fragment stays a line of its own (skipped
  /// on replay) instead of spoiling the next record.
  private var mayHaveTornTail = false

  /// Complete lines in the file now.
  public private(set) var lineCount = 0
  /// Successful commits (one write and one fsync each) since start.
  public private(set) var commitCount = 0
  /// Compactions since start, including one at start.
  public private(set) var compactionCount = 0
  /// The failure of the last commit or compaction, nil once one succeeds.
  public private(set) var lastError: Errno?

  /// Opens (creating when needed) the outbox in `folder` and replays it.
  /// Throws when the file cannot be read, rewritten or opened for appending.
  public init(loop: EventLoop, folder: StateFolder) throws(Errno) {
    self.loop = loop
    self.folder = folder
    folder.removeStaleTemporaries()
    guard let existing = try folder.read(Outbox.fileName) else {
      // First start: an empty log, made durable by syncing the folder that names it.
      fd = try folder.open(Outbox.fileName, .writeOnly, options: [.create, .append])
      try FileSystem.syncFolder(folder.path)
      return
    }
    let replay = Outbox.replay(existing)
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
    let isCompact = replay.skipped == 0 && !replay.tornTail && replay.lines == live.count
    if !isCompact { try compact() }
    // compact() reopened the log; otherwise open it for appending now.
    if fd == nil { fd = try folder.open(Outbox.fileName, .writeOnly, options: [.append]) }
  }

  deinit { fd?.close() }

  // MARK: IntentLog

  public func record(_ key: EntityKey, wanted: Bool?) {
    if let wanted {
      if live[key]?.wanted == wanted { return }
      live[key] = (wanted, nextSequence)
    } else {
      if live.removeValue(forKey: key) == nil { return }
    }
    nextSequence += 1
    Outbox.appendLine(key: key, wanted: wanted, to: &buffer)
    bufferedLines += 1
  }

  /// Unsettled intents in the order they were last changed. Right after start, that
  /// is what was pending when the process last stopped.
  public func unsettledIntents() -> [(EntityKey, Bool)] {
    live.sorted { $0.value.sequence < $1.value.sequence }.map { ($0.key, $0.value.wanted) }
  }

  public var count: Int { live.count }

  // MARK: Group commit

  /// Whether records wait for `commit()`.
  public var needsCommit: Bool { bufferedLines > 0 }

  /// Makes every record since the last commit durable with one write and one fsync,
  /// then compacts when the log has grown too long. On failure the error is logged
  /// and kept in `lastError`, the records stay buffered and the next commit tries
  /// again; returns whether everything recorded is durable now.
  @discardableResult
  public func commit() -> Bool {
    guard bufferedLines > 0 else { return true }
    do throws(Errno) {
      // Only a failed reopen after compaction leaves no descriptor.
      if self.fd == nil {
        self.fd = try folder.open(Outbox.fileName, .writeOnly, options: [.append])
      }
      let fd = self.fd!
      if mayHaveTornTail { buffer.insert(UInt8(ascii: "\n"), at: 0) }
      mayHaveTornTail = true
      try fd.writeAll(buffer)
      try fd.sync()
      mayHaveTornTail = false
    } catch {
      if buffer.first == UInt8(ascii: "\n") { buffer.removeFirst() }
      lastError = error
      Log.error("outbox: could not save \(bufferedLines) intent(s): \(error)")
      return false
    }
    lineCount += bufferedLines
    commitCount += 1
    buffer.removeAll(keepingCapacity: buffer.count <= 64 * 1024)
    bufferedLines = 0
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
    return true
  }

  /// Rewrites the log atomically with one line per live intent, and appends to the
  /// new file from then on. Records not yet committed are made durable by it too.
  public func compact() throws(Errno) {
    var bytes: [UInt8] = []
    let intents = unsettledIntents()
    for (key, wanted) in intents { Outbox.appendLine(key: key, wanted: wanted, to: &bytes) }
    try folder.replace(Outbox.fileName, with: bytes)
    // The old descriptor points at the replaced file: appends must go to the new one.
    fd?.close()
    fd = nil
    fd = try folder.open(Outbox.fileName, .writeOnly, options: [.append])
    lineCount = intents.count
    compactionCount += 1
    buffer.removeAll()
    bufferedLines = 0
    mayHaveTornTail = false
    lastError = nil
  }

  // MARK: Format

  static func appendLine(key: EntityKey, wanted: Bool?, to buffer: inout [UInt8]) {
    buffer.append(contentsOf: #"{"k":"#.utf8)
    appendJSONString(key.kind, to: &buffer)
    buffer.append(contentsOf: #","i":"#.utf8)
    appendJSONString(key.id, to: &buffer)
    switch wanted {
    case true?: buffer.append(contentsOf: #","w":true}"#.utf8)
    case false?: buffer.append(contentsOf: #","w":false}"#.utf8)
    case nil: buffer.append(contentsOf: #","w":null}"#.utf8)
    }
    buffer.append(UInt8(ascii: "\n"))
  }

  struct Replay {
    var live: [EntityKey: (wanted: Bool, sequence: UInt64)] = [:]
    /// Complete lines (ending in a newline), blank ones excluded.
    var lines = 0
    /// Complete lines that were not a record.
    var skipped = 0
    /// Whether the file ended in a line without its newline or unreadable.
    var tornTail = false
  }

  static func replay(_ bytes: [UInt8]) -> Replay {
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
      guard let (key, wanted) = record else {
        result.skipped += 1
        lastWasBad = true
        continue
      }
      lastWasBad = false
      if let wanted {
        result.live[key] = (wanted, UInt64(result.lines - 1))
      } else {
        result.live[key] = nil
      }
    }
    // An unreadable last line is a torn write too, not something to warn about.
    if lastWasBad {
      result.skipped -= 1
      result.tornTail = true
    }
    return result
  }

  static func parseLine(_ bytes: UnsafeRawBufferPointer) -> (EntityKey, Bool?)? {
    guard let object = try? JSON.parse(bytes), object.isObject,
      let kind = object["k"]?.string, let id = object["i"]?.string, let w = object["w"]
    else { return nil }
    if w.isNull { return (EntityKey(kind: kind, id: id), nil) }
    guard let wanted = w.bool else { return nil }
    return (EntityKey(kind: kind, id: id), wanted)
  }
}
