// Replay of the state files from arbitrary bytes (what a crash, a full disk or a hand
// edit can leave): the lines of the outbox and of the local backend (the journal's,
// and those of `outbox.log` and `local-follows.log` of earlier versions), the earlier
// snapshot (`local-follows.json`), the mutations ledger's lines (`mutations.log`), the
// `versions` mark and the warm start's `states`. Byte 0 picks the outbox's
// current environment; the rest is the file.
//
// Oracles: nothing traps; what a replay reads back survives being written again in the
// program's own format (replay → append lines → replay gives the same intents or
// follows; decode → encode → decode the same snapshot).
// The files themselves are opened by StateFolder.open (regular files only) in the
// process; here the bytes go straight to the parsers, which is where arbitrary content
// meets the code (and keeps the target in memory, without fsync).

import FuzzSupport
import JSON

@testable import NetworkModels

let environments: [String?] = [nil, "default", "staging", "e\u{0}\u{1F600}"]

func checkOutbox(_ bytes: [UInt8], environment: String?) {
  let replay = Outbox.replay(bytes, environment: environment)
  if let slot = replay.live.keys.first(where: { EntityKey.problem(kind: $0.key.kind, id: $0.key.id) != nil }) {
    fuzzFailure("outbox: replayed \(escaped(Array(slot.key.description.utf8))), which no request may name")
  }
  if replay.file.skipped < 0 || replay.file.skipped > replay.file.lines {
    fuzzFailure("outbox: \(replay.file.skipped) of \(replay.file.lines)")
  }
  var again: [UInt8] = []
  for (slot, intent) in replay.live.sorted(by: { $0.value.sequence < $1.value.sequence }) {
    Outbox.appendLine(slot, wanted: intent.wanted, to: &again)
  }
  let second = Outbox.replay(again, environment: environment)
  guard second.file.skipped == 0, !second.file.tornTail, second.live.count == replay.live.count,
    replay.live.allSatisfy({ second.live[$0.key]?.wanted == $0.value.wanted })
  else {
    fuzzFailure("outbox: its own lines of what it read do not read back the same:\n\(escaped(again))")
  }
}

func checkJournal(_ bytes: [UInt8]) {
  var follows: [EntityKey: Bool] = [:]
  var invalid: [InvalidLine] = []
  _ = LocalBackend.replay(bytes, invalid: &invalid) { key, following in follows[key] = following }
  // What is replayed passes the checks a request passes.
  if let key = follows.keys.first(where: { EntityKey.problem(kind: $0.kind, id: $0.id) != nil }) {
    fuzzFailure("journal: replayed \(escaped(Array(key.description.utf8))), which no request may name")
  }
  var again: [UInt8] = []
  for (key, following) in follows.sorted(by: { ($0.key.kind, $0.key.id) < ($1.key.kind, $1.key.id) }) {
    LocalBackend.appendLine(key, following, to: &again)
  }
  var second: [EntityKey: Bool] = [:]
  let secondReplay = LocalBackend.replay(again, invalid: &invalid) { key, following in second[key] = following }
  guard secondReplay.skipped == 0, !secondReplay.tornTail, second == follows else {
    fuzzFailure("journal: its own lines of what it read do not read back the same:\n\(escaped(again))")
  }
}

func checkLedger(_ bytes: [UInt8]) {
  var read: [MutationEntry] = []
  _ = JournalLines(bytes) { line, _ in
    guard let object = line.withUnsafeBytes({ try? JSONScanner.scanObjectMembers($0) }) else { return false }
    if case .success(let entry) = MutationLedger.parseRecord(object) { read.append(entry) }
    return true
  }
  for entry in read {
    if EntityKey.problem(kind: entry.key.kind, id: entry.key.id) != nil {
      fuzzFailure("ledger: read \(escaped(Array(entry.key.description.utf8))), which no request may name")
    }
    var line: [UInt8] = []
    MutationLedger.appendLine(entry, to: &line)
    let again = line.dropLast().withUnsafeBytes { bytes in
      (try? JSONScanner.scanObjectMembers(bytes)).flatMap { $0 }.map(MutationLedger.parseRecord)
    }
    guard case .success(let second)? = again, second == entry else {
      fuzzFailure("ledger: its own line of what it read does not read back the same:\n\(escaped(line))")
    }
  }
}

func checkSnapshot(_ bytes: [UInt8]) {
  guard case .success(let follows) = LocalBackend.decode(bytes) else { return }
  let encoded = LocalBackend.encode(follows)
  guard case .success(let again) = LocalBackend.decode(encoded), again == follows else {
    fuzzFailure("snapshot: decode → encode → decode changed it:\n\(escaped(encoded))")
  }
}

func checkVersionMark(_ bytes: [UInt8]) {
  guard case .success(let mark) = VersionBase.parseMark(bytes) else { return }
  if mark > VersionBase.limit { fuzzFailure("versions: a mark of \(mark), above \(VersionBase.limit)") }
}

func checkWarmStates(_ bytes: [UInt8], environment: String) {
  let now: UInt64 = 1_800_000_000_000
  guard case .entries(let entries, _) = WarmStates.read(bytes, environment: environment, nowMs: now) else { return }
  if let entry = entries.first(where: { EntityKey.problem(kind: $0.key.kind, id: $0.key.id) != nil }) {
    fuzzFailure("states: read \(escaped(Array(entry.key.description.utf8))), which no request may name")
  }
  if let entry = entries.first(where: { $0.confirmedAtMs > now || ($0.requested && $0.following) }) {
    fuzzFailure("states: read \(entry), which no run could have confirmed")
  }
  let (text, kept) = WarmStates.encode(entries, environment: environment, maxBytes: .max)
  guard kept == entries.count,
    case .entries(let again, skipped: 0) = WarmStates.read(text, environment: environment, nowMs: now),
    again == entries
  else {
    fuzzFailure("states: its own text of what it read does not read back the same:\n\(escaped(text))")
  }
}

@main
struct FuzzStateFiles {
  static func main() {
    // Globals are made on first use: before the first input, or their allocations
    // would count as that input's leak.
    withoutLeakChecks { _ = environments }
    runFuzzer { data in
      guard let selector = data.first else { return }
      let bytes = Array(data[1...])
      checkOutbox(bytes, environment: environments[Int(selector) % environments.count])
      checkJournal(bytes)
      checkSnapshot(bytes)
      checkLedger(bytes)
      checkVersionMark(bytes)
      checkWarmStates(bytes, environment: environments[Int(selector) % environments.count] ?? "the local backend")
    }
  }
}
