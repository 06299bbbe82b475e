import JSON
import Posix

/// The ledger's durable form: `mutations.log` in the state folder, a journal of its
/// own (`Journal`: group commit, a torn last line ignored, hostile lines set aside,
/// compaction to one line per kept entry), apart from `journal.log`, so that what only
/// informs can never stand in the way of the intents. One line per change of an
/// entry, its whole state, the last line of a `seq` winning:
///
///     {"q":7,"k":"artist","i":"banksy","w":true,"c":"nvim","a":1764690000123,"o":"pending"}
///     {"q":7,"k":"artist","i":"banksy","w":true,"c":"nvim","a":1764690000123,"o":"refused",
///      "t":1764690000456,"n":1,"x":"rejected","xs":404,"xm":"not found"}
///
/// (one line each). A compaction starts the file with `{"next":N}`, so that `seq`
/// never goes back even once every entry was dropped. The lines only inform: none
/// is urgent, so a commit writes them without an fsync (a kill -9 loses nothing
/// written; a power loss may lose the last outcomes).
extension MutationLedger: JournalPart {
  public static let fileName = "mutations.log"
  /// A `seq` above this is taken for garbage: JSON readers lose integers beyond 2^53.
  static let maxSeq: UInt64 = 1 << 53

  /// Opens (or creates) `mutations.log` in `folder` and reads it back; throws when it
  /// cannot be read.
  public convenience init(
    folder: StateFolder, maxEntries: Int = MutationLedger.defaultMaxEntries,
    maxBytes: Int = MutationLedger.defaultMaxBytes
  ) throws(Errno) {
    self.init(maxEntries: maxEntries, maxBytes: maxBytes)
    let journal = try Journal(folder: folder, name: MutationLedger.fileName)
    self.journal = journal
    journal.attach(self)
    finishReplay()
  }

  /// Writes this turn's lines (no fsync: see above), and compacts the file once it
  /// holds twice the byte bound: the journal counts lines only, and 1,000 lines of
  /// long ids could be far more than the bound. Called once per loop turn.
  public func commit() {
    guard let journal else { return }
    journal.commit()
    if journal.fileSize > 2 * maxBytes { try? journal.compact() }
  }

  /// The file as its entries are now, one line each, unless it is so already (a clean
  /// stop: the next start reads the entries only).
  public func compactIfNeeded() {
    guard let journal, !journal.isCompact else { return }
    do { try journal.compact() } catch { Log.warn("could not compact \(journal.folder.file(journal.name)): \(error)") }
  }

  /// Buffers the entry's line for this turn's commit; returns its length (what the
  /// byte bound counts), measured in the buffer rather than encoded twice.
  func write(_ entry: MutationEntry) -> Int {
    guard let journal else { return MutationLedger.lineBytes(entry) }
    var size = 0
    journal.record(urgent: false) { buffer in
      let before = buffer.count
      MutationLedger.appendLine(entry, to: &buffer)
      size = buffer.count - before
    }
    return size
  }

  // MARK: JournalPart

  public func replay(_ record: JSONScanner.ScannedObject) -> ReplayOutcome {
    if let next = record["next"] {
      guard let value = next.integerValue, value >= 1, UInt64(value) <= MutationLedger.maxSeq else {
        return .invalid("\"next\" is not a seq")
      }
      nextSeq = max(nextSeq, UInt64(value))
      return .replayed
    }
    switch MutationLedger.parseRecord(record) {
    case .failure(let problem): return .invalid(problem.reason)
    case .success(var entry):
      entry.bytes = MutationLedger.lineBytes(entry)
      replayed[entry.seq] = entry
      nextSeq = max(nextSeq, entry.seq + 1)
      return .replayed
    }
  }

  public func appendState(to bytes: inout [UInt8]) {
    appendDecimal(Int64(nextSeq), between: #"{"next":"#, and: "}\n", to: &bytes)
    for entry in entries[head...] { MutationLedger.appendLine(entry, to: &bytes) }
  }

  public var stateLines: Int { count + 1 }
  public func recordsCommitted() {}
  /// The lines are lost, the entries are not: the next compaction writes them.
  public func recordsFailed(_ error: Errno) { journal?.requestRewrite() }
  public func commitEnded() {}

  /// The entries read at start, in `seq` order; of two open entries of one entity
  /// (which no run makes) the older is taken as superseded.
  private func finishReplay() {
    let read = replayed.values.sorted { $0.seq < $1.seq }
    replayed = [:]
    for var entry in read {
      bytes += entry.bytes
      if !entry.outcome.isFinal {
        let slot = Slot(environment: entry.environment, key: entry.key)
        if let older = open[slot], let index = index(of: older) {
          entries[index].outcome = .superseded
          entries[index].settledAtMs = entry.acceptedAtMs
          journal?.requestRewrite()
        }
        open[slot] = entry.seq
      }
      entry.bytes = MutationLedger.lineBytes(entry)
      entries.append(entry)
    }
    keepBounded()
  }

  // MARK: Format

  static func lineBytes(_ entry: MutationEntry) -> Int {
    var line: [UInt8] = []
    appendLine(entry, to: &line)
    return line.count
  }

  /// Literals and decimals only (`appendLiteral`, `appendDecimal`): two lines an
  /// intent, on the request path.
  static func appendLine(_ entry: MutationEntry, to buffer: inout [UInt8]) {
    appendDecimal(Int64(entry.seq), between: #"{"q":"#, and: #","k":"#, to: &buffer)
    appendJSONString(entry.key.kind, to: &buffer)
    appendLiteral(#","i":"#, to: &buffer)
    appendJSONString(entry.key.id, to: &buffer)
    appendLiteral(entry.intent ? #","w":true"# : #","w":false"#, to: &buffer)
    if let client = entry.client {
      appendLiteral(#","c":"#, to: &buffer)
      appendJSONString(client, to: &buffer)
    }
    if let environment = entry.environment {
      appendLiteral(#","e":"#, to: &buffer)
      appendJSONString(environment, to: &buffer)
    }
    appendDecimal(entry.acceptedAtMs, between: #","a":"#, and: #","o":""#, to: &buffer)
    appendLiteral(entry.outcome.literal, to: &buffer)
    buffer.append(UInt8(ascii: "\""))
    if let settled = entry.settledAtMs { appendDecimal(settled, between: #","t":"#, and: "", to: &buffer) }
    if entry.attempts > 0 { appendDecimal(Int64(entry.attempts), between: #","n":"#, and: "", to: &buffer) }
    if let failure = entry.failure {
      switch failure.kind {
      case .unavailable: appendLiteral(#","x":"unavailable""#, to: &buffer)
      case .rejected(let status): appendDecimal(Int64(status), between: #","x":"rejected","xs":"#, and: "", to: &buffer)
      case .unauthorized(let status):
        appendDecimal(Int64(status), between: #","x":"unauthorized","xs":"#, and: "", to: &buffer)
      case .unknownKind: appendLiteral(#","x":"unknownKind""#, to: &buffer)
      }
      appendLiteral(#","xm":"#, to: &buffer)
      appendJSONString(failure.message, to: &buffer)
    }
    appendLiteral("}\n", to: &buffer)
  }

  /// Times a line may carry: from 1970 to the end of year 9999, in milliseconds.
  static let times: ClosedRange<Int64> = 0...253_402_300_799_999

  /// An entry line, checked as hostile input: the key as a request's, every field of
  /// its type and range.
  static func parseRecord(_ object: JSONScanner.ScannedObject) -> Result<MutationEntry, RecordProblem> {
    guard let q = object["q"]?.integerValue, q >= 1, UInt64(q) < maxSeq else {
      return .failure(RecordProblem("\"q\" is not a seq"))
    }
    let key: EntityKey
    switch JournalRecord.key(object) {
    case .failure(let problem): return .failure(problem)
    case .success(let checked): key = checked
    }
    guard let intent = object["w"]?.boolValue else { return .failure(RecordProblem("\"w\" is not true or false")) }
    guard let accepted = object["a"]?.integerValue, times.contains(accepted) else {
      return .failure(RecordProblem("\"a\" is not a time"))
    }
    guard let name = object["o"]?.stringValue, let outcome = MutationOutcome(rawValue: name) else {
      return .failure(RecordProblem("\"o\" is not an outcome"))
    }
    var client: String?
    if let c = object["c"] {
      guard let text = c.stringValue else { return .failure(RecordProblem("\"c\" is not a client name")) }
      client = text
    }
    var environment: String?
    if let e = object["e"] {
      guard let text = e.stringValue, !text.isEmpty else {
        return .failure(RecordProblem("\"e\" is not an environment name"))
      }
      environment = text
    }
    var entry = MutationEntry(
      seq: UInt64(q), key: key, intent: intent, client: client, environment: environment, acceptedAtMs: accepted)
    entry.outcome = outcome
    if let t = object["t"] {
      guard let settled = t.integerValue, times.contains(settled) else {
        return .failure(RecordProblem("\"t\" is not a time"))
      }
      entry.settledAtMs = settled
    }
    if let n = object["n"] {
      guard let attempts = n.integerValue, attempts >= 0, attempts <= Int64(Int32.max) else {
        return .failure(RecordProblem("\"n\" is not a count"))
      }
      entry.attempts = Int(attempts)
    }
    if let x = object["x"] {
      guard let message = object["xm"]?.stringValue else { return .failure(RecordProblem("\"xm\" is not a message")) }
      var status: Int?
      if let xs = object["xs"] {
        guard let value = xs.integerValue, (100...599).contains(value) else {
          return .failure(RecordProblem("\"xs\" is not an HTTP status"))
        }
        status = Int(value)
      }
      let kind: FollowFailure.Kind
      switch (x.stringValue, status) {
      case ("unavailable"?, nil): kind = .unavailable
      case ("rejected"?, let status?): kind = .rejected(status: status)
      case ("unauthorized"?, let status?): kind = .unauthorized(status: status)
      case ("unknownKind"?, nil): kind = .unknownKind
      default: return .failure(RecordProblem("\"x\" is not a failure"))
      }
      entry.failure = FollowFailure(kind, message)
    }
    return .success(entry)
  }
}
