import JSON
import Posix

/// What keeps its state in the journal (the outbox, the local backend): it reads its
/// lines back at start, writes its whole state when the journal is compacted, and is
/// told how each commit of its records ended.
public protocol JournalPart: AnyObject {
  /// Takes one line read at start (a JSON object), or says it is not this part's, or
  /// refuses it: a line a request could not have made is never replayed.
  func replay(_ record: JSONScanner.ScannedObject) -> ReplayOutcome
  /// Appends one line per element of the state in memory now, records not yet
  /// committed included: what a compaction writes.
  func appendState(to bytes: inout [UInt8])
  /// Lines `appendState` would write now (the compaction threshold grows with them).
  var stateLines: Int { get }
  /// Every record since the last commit is in the file now (durable unless the
  /// commit was one without fsync, which only holds records that may be lost).
  func recordsCommitted()
  /// No record since the last commit counts: take them back.
  func recordsFailed(_ error: Errno)
  /// Called on every part once all of them know how the commit ended: the place to
  /// answer callers, which may record again.
  func commitEnded()
}

/// The state folder's one append-only file, `journal.log`, shared by the outbox and the
/// local backend: one JSON object per line, each part reading back only its own
/// (`JournalPart.replay`), so that all the records of one loop turn are made durable
/// together, with one `write` and one `fsync` (group commit). The mutations ledger
/// keeps a journal of its own, `mutations.log` (`name`), by the same rules.
///
/// A commit that fails is taken back: the file is cut back to its length before it,
/// and the parts undo their records. When even the cut fails, the next commit
/// rewrites the file instead of appending, so that no stray line can win on replay.
///
/// A compaction rewrites the file atomically (`StateFolder.replace`) with each part's
/// state; it happens when the file has more than max(1000, 2 × state) lines, when the
/// file was left incomplete by a crash, lost its name (removed, or its folder deleted
/// while running), or when a part read files of an earlier version (which it removes).
/// Lines no open part claims (another backend's) are kept as they are.
///
/// At start, an incomplete last line (a write the last run did not finish, so never
/// acknowledged) is ignored; an unreadable line before it is skipped with a warning.
/// A part's line that a request could not have made (`ReplayOutcome.invalid`) is never
/// replayed: it is kept in `journal.log.invalid-<n>` with a warning naming its line,
/// and left out of the next rewrite.
///
/// All methods must be called on the loop's thread.
public final class Journal {
  public static let fileName = "journal.log"
  /// The file's name in the folder (`fileName` unless another journal's).
  public let name: String
  /// Compaction starts once the journal has more lines than
  /// max(`compactionMinimumLines`, `compactionFactor` × the parts' state lines).
  public static let compactionMinimumLines = 1000
  public static let compactionFactor = 2

  public let folder: StateFolder
  /// Weak: each part holds its journal.
  private var attached: [Attached] = []
  private struct Attached {
    weak var part: JournalPart?
  }
  private var parts: [JournalPart] { attached.compactMap(\.part) }
  /// The file's length after the last successful write: where a failed one is cut back to.
  private var writtenSize = 0
  /// Lines read at start that no part has claimed yet, with their line numbers.
  private var unclaimed: [(number: Int, bytes: [UInt8])] = []
  /// Files of an earlier version of the state folder that parts read at start: the
  /// next compaction, which holds their content, removes them.
  private var legacyFiles: [String] = []
  /// Where the lines that parts refused at start are kept (`journal.log.invalid-<n>`),
  /// and those lines.
  private var invalidAside: String?
  private var keptAside: [InvalidLine] = []
  /// Whether the next commit rewrites the file instead of appending to it.
  private var rewriteNeeded = false
  /// The file holds nothing a compaction would drop: it was made empty, read empty, or
  /// compacted, and nothing was appended since.
  private var fileIsCompact = false
  /// After a failed compaction, the line count at which the next one is tried:
  /// retrying after every commit would make each one cost O(state).
  private var compactionRetryLines = 0

  private var buffer: [UInt8] = []
  private var bufferedLines = 0
  /// Buffered records a reply waits for: with none, a commit writes without fsync.
  private var urgentLines = 0
  /// A failed write may have left part of a line at the end of the file: the next
  /// append starts with a newline, so that fragment stays a line of its own.
  private var mayHaveTornTail = false

  /// The file's length after the last successful write.
  public var fileSize: Int { writtenSize }
  /// Complete lines in the file now (as far as this process knows).
  public private(set) var lineCount = 0
  /// Successful commits with an fsync (one that had to rewrite the file included).
  public private(set) var syncedCommitCount = 0
  /// Compactions since start.
  public private(set) var compactionCount = 0
  /// Bytes appended since start, and bytes written by compactions.
  public private(set) var bytesAppended = 0
  public private(set) var bytesCompacted = 0

  /// Reads the file `name` in `folder` (creating it empty, and durable, when missing);
  /// parts attach with `attach(_:)`. Throws when the file cannot be read.
  public init(folder: StateFolder, name: String = Journal.fileName) throws(Errno) {
    self.folder = folder
    self.name = name
    folder.removeStaleTemporaries()
    guard let bytes = try folder.read(name) else {
      // An empty journal, made durable by syncing the folder that names it, so that
      // commits need one fsync only. When that fails, the first commit writes it anew.
      do {
        try folder.open(name, .writeOnly, options: [.create, .append]).close()
        try folder.syncFolder()
        fileIsCompact = true
      } catch {
        Log.warn("\(folder.file(name)) could not be created: \(error)")
        rewriteNeeded = true
      }
      return
    }
    read(bytes)
    writtenSize = bytes.count
    fileIsCompact = bytes.isEmpty
  }

  /// Whether a compaction would write the file as it is now (so a clean stop can skip
  /// its two fsyncs): nothing buffered, nothing appended since the file was last made
  /// compact, no earlier version's files to remove.
  public var isCompact: Bool {
    fileIsCompact && bufferedLines == 0 && legacyFiles.isEmpty && !rewriteNeeded && !mayHaveTornTail
      && folder.exists(name)
  }

  private func read(_ bytes: [UInt8]) {
    let read = JournalLines(bytes) { line, number in
      let isObject = line.withUnsafeBytes { (try? JSONScanner.scanObjectMembers($0)) != nil }
      if isObject { unclaimed.append((number, Array(line))) }
      return isObject
    }
    lineCount += read.lines
    let skipped = read.skipped
    let tornTail = read.tornTail
    if skipped > 0 { Log.warn("\(folder.file(name)): skipped \(skipped) unreadable line(s)") }
    if tornTail {
      Log.info("\(folder.file(name)): ignored an incomplete last line (the last run stopped mid-write)")
    }
    // A torn tail must not glue itself to the next append: the first commit rewrites.
    rewriteNeeded = tornTail || skipped > 0
  }

  /// Gives `part` its lines read at start, in file order; `legacyFiles`: the files of
  /// an earlier version it read before (the next compaction replaces them). The part
  /// is held weakly, and must live as long as the journal is written: a compaction
  /// after it went away would leave its state out.
  public func attach(_ part: JournalPart, legacyFiles: [String] = []) {
    attached.append(Attached(part: part))
    var invalid: [InvalidLine] = []
    unclaimed.removeAll { line in
      let outcome = line.bytes.withUnsafeBytes { bytes -> ReplayOutcome in
        guard let record = try? JSONScanner.scanObjectMembers(bytes) else { return .notThisPart }
        return part.replay(record)
      }
      switch outcome {
      case .replayed: return true
      case .notThisPart: return false
      case .invalid(let reason):
        invalid.append(InvalidLine(number: line.number, bytes: line.bytes, reason: reason))
        return true
      }
    }
    if !invalid.isEmpty {
      // One file for all the parts' lines: each part that attaches adds its own.
      let aside = invalidAside ?? folder.nameForInvalidLines(of: name)
      invalidAside = aside
      keptAside += invalid
      if folder.setAside(keptAside, of: name, as: aside, announcing: keptAside.suffix(invalid.count)) {
        // Kept aside: the next commit writes the journal without them.
        rewriteNeeded = true
      } else {
        // Then they stay where they are, unclaimed (never replayed).
        unclaimed += invalid.map { ($0.number, $0.bytes) }
      }
    }
    if !legacyFiles.isEmpty {
      self.legacyFiles += legacyFiles
      rewriteNeeded = true
    }
  }

  /// Makes the next commit a compaction (a part read lines it wants written anew).
  public func requestRewrite() { rewriteNeeded = true }

  // MARK: Recording

  /// Buffers one record written by `line` (which must end it with a newline) until
  /// the next commit; `urgent`: a reply waits for it to be durable.
  public func record(urgent: Bool, _ line: (inout [UInt8]) -> Void) {
    line(&buffer)
    bufferedLines += 1
    if urgent { urgentLines += 1 }
  }

  /// Whether a buffered record waits for an fsync.
  public var needsSync: Bool { urgentLines > 0 }

  // MARK: Group commit

  /// Writes every buffered record with one write, and one fsync when one of them is
  /// urgent or `sync` asks; a rewrite instead when one is due. Returns whether they
  /// are in the file; when not, every part took its records back.
  @discardableResult
  public func commit(sync: Bool = false) -> Bool {
    guard bufferedLines > 0 else { return true }
    let syncing = sync || urgentLines > 0
    // Opened for each commit: an open and a close cost little next to the fsync, and a
    // file that lost its name (removed, or the state folder deleted while running),
    // or a folder made read-only, makes the commit fail instead of going to a file no
    // start reads.
    if rewriteNeeded { return commitByRewriting() }
    let fd: FileDescriptor
    do {
      fd = try folder.open(name, .writeOnly, options: [.append])
    } catch  where error.code == Errno.noEntry {
      // Write everything to a new file instead; without a folder that fails.
      return commitByRewriting()
    } catch {
      fail(error, fd: nil)
      return false
    }
    defer { fd.close() }
    var bytes: [UInt8] = []
    if mayHaveTornTail { bytes.append(UInt8(ascii: "\n")) }
    bytes += buffer
    do throws(Errno) {
      mayHaveTornTail = true
      try folder.write(bytes, to: fd, name)
      if syncing { try folder.sync(fd, name) }
      mayHaveTornTail = false
    } catch {
      fail(Errno(error.code, call: "\(error.call) \(folder.file(name))"), fd: fd)
      return false
    }
    writtenSize += bytes.count
    bytesAppended += bytes.count
    lineCount += bufferedLines
    fileIsCompact = false
    if syncing { syncedCommitCount += 1 }
    succeed()
    compactIfDue()
    return true
  }

  private func commitByRewriting() -> Bool {
    guard (try? compact()) != nil else { return false }
    syncedCommitCount += 1
    return true
  }

  private func succeed() {
    clearBuffer()
    for part in parts { part.recordsCommitted() }
    for part in parts { part.commitEnded() }
  }

  private func fail(_ error: Errno, fd: FileDescriptor?) {
    Log.error("could not save \(bufferedLines) record(s) to \(folder.file(name)): \(error)")
    // A partial write may have left whole lines nobody was told about: shrinking
    // needs no space, so cut them off. If even that fails, the next commit rewrites.
    if let fd, (try? folder.truncate(fd, name, toSize: writtenSize)) != nil,
      (try? folder.sync(fd, name)) != nil
    {
      mayHaveTornTail = false
    } else {
      rewriteNeeded = true
    }
    clearBuffer()
    for part in parts { part.recordsFailed(error) }
    for part in parts { part.commitEnded() }
  }

  private func clearBuffer() {
    buffer.removeAll(keepingCapacity: buffer.count <= 64 * 1024)
    bufferedLines = 0
    urgentLines = 0
  }

  private var compactionThreshold: Int {
    max(Journal.compactionMinimumLines, Journal.compactionFactor * parts.reduce(0) { $0 + $1.stateLines })
  }

  private func compactIfDue() {
    guard bufferedLines == 0, lineCount > max(compactionThreshold, compactionRetryLines) else { return }
    do {
      try compact()
    } catch {
      // The file is still correct, only long: try again once it has grown as much
      // again, so a compaction that keeps failing costs no more than one that works.
      compactionRetryLines = lineCount + compactionThreshold
    }
  }

  /// Rewrites the file atomically with every part's state (buffered records
  /// included, which it commits) and the lines no part claimed, then removes the
  /// parts' files of an earlier version. The service calls it on a clean shutdown, so
  /// the next start reads one short file. When it throws, the file is as before and
  /// the buffered records were taken back.
  public func compact() throws(Errno) {
    var bytes: [UInt8] = []
    for part in parts { part.appendState(to: &bytes) }
    for line in unclaimed {
      bytes += line.bytes
      bytes.append(UInt8(ascii: "\n"))
    }
    do throws(Errno) {
      try folder.replace(name, with: bytes)
      // Only once the new file is durable: until then a start reads the old ones.
      if !legacyFiles.isEmpty {
        for name in legacyFiles where folder.exists(name) { try folder.remove(name) }
        try folder.syncFolder()
        legacyFiles.removeAll()
      }
    } catch {
      Log.error("could not compact \(folder.file(name)): \(error)")
      // The old file is still in place, as it was: nothing of the buffer is in it.
      clearBuffer()
      for part in parts { part.recordsFailed(error) }
      for part in parts { part.commitEnded() }
      throw error
    }
    writtenSize = bytes.count
    bytesCompacted += bytes.count
    lineCount = bytes.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    rewriteNeeded = false
    mayHaveTornTail = false
    compactionRetryLines = 0
    compactionCount += 1
    fileIsCompact = true
    succeed()
  }
}
