import EventLoop
import JSON
import NetworkModels
import Posix
import Testing

/// A fresh folder under /tmp (mkdtemp), removed when the test ends.
final class LocalBackendTestFolder {
  let path: String
  let folder: StateFolder

  init() throws {
    path = try FileSystem.makeTemporaryFolder(prefix: "netmodel-state-test-")
    folder = try StateFolder(path: path)
  }

  deinit { FileSystem.removeTree(path) }

  func text(_ name: String) throws -> String? {
    try folder.read(name).map { String(decoding: $0, as: UTF8.self) }
  }

  func write(_ name: String, _ text: String) throws {
    let fd = try FileDescriptor.open(folder.file(name), .writeOnly, options: [.create, .truncate])
    defer { fd.close() }
    try fd.writeAll(Array(text.utf8))
  }

  func names() throws -> [String] { try FileSystem.contentsOfFolder(path).sorted() }

  /// The local backend's journal, "" when empty, nil when missing.
  func journal() throws -> String? { try text(Journal.fileName) }
}

private let banksy = EntityKey(kind: "artist", id: "banksy")
private let adele = EntityKey(kind: "artist", id: "adele")
private let zappa = EntityKey(kind: "artist", id: "zappa")
private let fabric = EntityKey(kind: "venue", id: "fabric")

/// One journal line: `{"k":…,"i":…,"f":…}` and a newline.
private func journalLine(_ key: EntityKey, _ following: Bool) -> String {
  #"{"k":"\#(key.kind)","i":"\#(key.id)","f":\#(following)}"# + "\n"
}

/// The snapshot holding exactly `follows` (kinds and ids sorted, as written).
private func snapshot(_ follows: [String: [String]]) -> String {
  let byKind = follows.keys.sorted().map { kind in
    "\"\(kind)\":[" + follows[kind]!.sorted().map { "\"\($0)\"" }.joined(separator: ",") + "]"
  }
  return #"{"version":1,"follows":{"# + byKind.joined(separator: ",") + "}}\n"
}

/// A disk that is full while `isFull`: every write to the state folder fails with ENOSPC.
final class FullDisk: StateFileObserver, @unchecked Sendable {
  var isFull = false
  func willPerform(_ operation: StateFileOperation) throws(Errno) {
    if isFull, case .write = operation { throw Errno(Errno.noSpace, call: "write (injected)") }
  }
}

/// Results of one backend call, filled in when its completion runs.
private final class Answer<T> {
  var result: Result<T, FollowFailure>?
  var value: T? { try? result?.get() }
  func callAsFunction(_ result: Result<T, FollowFailure>) {
    precondition(self.result == nil, "completion called twice")
    self.result = result
  }
}

@Suite struct LocalBackendTests {
  @Test func followUnfollowFetchAndListByKind() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)

    let followed = [zappa, banksy, adele, fabric].map { key in
      let answer = Answer<FollowAnswer>()
      backend.setFollowing(key, true, completion: answer.callAsFunction)
      return answer
    }
    try loop.runOnce(wait: false)
    #expect(followed.allSatisfy { $0.value == true })

    let artists = Answer<[EntityKey]>()
    let venues = Answer<[EntityKey]>()
    let labels = Answer<[EntityKey]>()
    backend.followed(kind: "artist", completion: artists.callAsFunction)
    backend.followed(kind: "venue", completion: venues.callAsFunction)
    backend.followed(kind: "label", completion: labels.callAsFunction)
    try loop.runOnce(wait: false)
    #expect(artists.value == [adele, banksy, zappa])
    #expect(venues.value == [fabric])
    #expect(labels.value == [])

    let unfollowed = Answer<FollowAnswer>()
    backend.setFollowing(banksy, false, completion: unfollowed.callAsFunction)
    try loop.runOnce(wait: false)
    #expect(unfollowed.value == false)

    let banksyState = Answer<FollowAnswer>()
    let adeleState = Answer<FollowAnswer>()
    let unknownState = Answer<FollowAnswer>()
    backend.fetchFollowing(banksy, completion: banksyState.callAsFunction)
    backend.fetchFollowing(adele, completion: adeleState.callAsFunction)
    backend.fetchFollowing(EntityKey(kind: "label", id: "warp"), completion: unknownState.callAsFunction)
    try loop.runOnce(wait: false)
    #expect(banksyState.value == false)
    #expect(adeleState.value == true)
    #expect(unknownState.value == false)
    #expect(backend.followCount == 3)
  }

  @Test func completionsAreNeverCalledInsideTheCall() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    let set = Answer<FollowAnswer>()
    let unchanged = Answer<FollowAnswer>()
    let fetch = Answer<FollowAnswer>()
    let list = Answer<[EntityKey]>()
    backend.setFollowing(banksy, true, completion: set.callAsFunction)
    backend.setFollowing(adele, false, completion: unchanged.callAsFunction)
    backend.fetchFollowing(banksy, completion: fetch.callAsFunction)
    backend.followed(kind: "artist", completion: list.callAsFunction)
    #expect(set.result == nil && unchanged.result == nil && fetch.result == nil && list.result == nil)
    try loop.runOnce(wait: false)
    #expect(set.value == true)
    #expect(unchanged.value == false)
    // A read made while a save was due answers after it, with the state it saved.
    #expect(fetch.value == true)
    #expect(list.value == [banksy])

    // With nothing to save, reads still answer on the next iteration, with the state
    // of the call: a change made after it is not durable yet.
    let later = Answer<FollowAnswer>()
    backend.fetchFollowing(banksy, completion: later.callAsFunction)
    backend.setFollowing(banksy, false) { _ in }
    #expect(later.result == nil)
    try loop.runOnce(wait: false)
    #expect(later.value == true)
    #expect(!backend.isFollowing(banksy))
  }

  @Test func changesOfOneIterationAreAppendedOnceAndConfirmedOnlyWhenDurable() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    var journalSeenByCompletions: [String?] = []
    for i in 0..<10 {
      backend.setFollowing(EntityKey(kind: "artist", id: "a\(i)"), true) { _ in
        journalSeenByCompletions.append(try? temp.journal())
      }
    }
    // The journal is made (empty) at the first start; nothing is written before the save.
    #expect(try temp.journal() == "")
    try loop.runOnce(wait: false)
    #expect(backend.saveCount == 1)
    let expected = (0..<10).map { journalLine(EntityKey(kind: "artist", id: "a\($0)"), true) }.joined()
    #expect(journalSeenByCompletions == Array(repeating: expected, count: 10))
    #expect(try temp.names() == [Journal.fileName])

    // Nothing changed: confirmed without writing.
    let again = Answer<FollowAnswer>()
    backend.setFollowing(EntityKey(kind: "artist", id: "a3"), true, completion: again.callAsFunction)
    backend.setFollowing(banksy, false) { _ in }
    try loop.runOnce(wait: false)
    #expect(again.value == true)
    #expect(backend.saveCount == 1)
    #expect(try temp.journal() == expected)

    // Calls made by completions wait for the next iteration's save.
    var order: [String] = []
    backend.setFollowing(banksy, true) { _ in
      order.append("first")
      backend.setFollowing(adele, true) { _ in order.append("second") }
    }
    try loop.runOnce(wait: false)
    #expect(order == ["first"])
    #expect(backend.saveCount == 2)
    try loop.runOnce(wait: false)
    #expect(order == ["first", "second"])
    #expect(backend.saveCount == 3)
    #expect(try temp.journal() == expected + journalLine(banksy, true) + journalLine(adele, true))
  }

  @Test func manyChangesOfOneIterationAreOneJournalCommitWithOneLineEach() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    var expected = ""
    for i in 0..<500 {
      let key = EntityKey(kind: i % 2 == 0 ? "artist" : "venue", id: "e\(i)")
      backend.setFollowing(key, true) { _ in }
      expected += journalLine(key, true)
    }
    // Undoing a change is a change too; repeating one is not.
    backend.setFollowing(EntityKey(kind: "artist", id: "e0"), false) { _ in }
    backend.setFollowing(EntityKey(kind: "artist", id: "e2"), true) { _ in }
    expected += journalLine(EntityKey(kind: "artist", id: "e0"), false)
    try loop.runOnce(wait: false)
    #expect(backend.saveCount == 1)
    #expect(backend.journalLines == 501)
    #expect(backend.compactionCount == 0)
    #expect(backend.followCount == 499)
    let journal = try #require(try temp.journal())
    #expect(journal == expected)
    #expect(backend.journal.bytesAppended == journal.utf8.count)
    #expect(backend.journal.bytesCompacted == 0)
  }

  @Test func followsSurviveARestart() throws {
    let temp = try LocalBackendTestFolder()
    do {
      let loop = try EventLoop(clock: ManualClock())
      let backend = try LocalBackend(loop: loop, folder: temp.folder)
      for key in [banksy, adele, fabric] { backend.setFollowing(key, true) { _ in } }
      backend.setFollowing(adele, false) { _ in }
      try loop.runOnce(wait: false)
    }
    #expect(try temp.names() == [Journal.fileName])
    #expect(
      try temp.journal()
        == journalLine(banksy, true) + journalLine(adele, true) + journalLine(fabric, true) + journalLine(adele, false))

    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(backend.isFollowing(banksy))
    #expect(!backend.isFollowing(adele))
    #expect(backend.followCount == 2)
    let state = Answer<FollowAnswer>()
    let venues = Answer<[EntityKey]>()
    backend.fetchFollowing(fabric, completion: state.callAsFunction)
    backend.followed(kind: "venue", completion: venues.callAsFunction)
    try loop.runOnce(wait: false)
    #expect(state.value == true)
    #expect(venues.value == [fabric])
    // A start writes nothing; a compaction (as on a clean shutdown) leaves one line per follow.
    #expect(backend.compactionCount == 0)
    #expect(backend.saveCount == 0)
    try backend.compact()
    #expect(try temp.journal() == journalLine(banksy, true) + journalLine(fabric, true))
  }

  /// The snapshot and journal of versions before the shared journal: read at start,
  /// replaced by the journal at the first commit.
  @Test func followsOfAnEarlierVersionAreReadThenMovedIntoTheJournal() throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(LocalBackend.legacySnapshotName, snapshot(["artist": ["adele", "banksy"]]))
    try temp.write(
      LocalBackend.legacyJournalName,
      journalLine(banksy, false) + journalLine(zappa, true) + journalLine(fabric, true) + journalLine(zappa, false)
        + journalLine(adele, true) + "\n" + journalLine(banksy, true) + journalLine(banksy, false))
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(backend.isFollowing(adele))
    #expect(!backend.isFollowing(banksy))
    #expect(!backend.isFollowing(zappa))
    #expect(backend.isFollowing(fabric))
    #expect(backend.followCount == 2)
    // Nothing is written before a change: an older program could still read the folder.
    #expect(
      try temp.names() == [Journal.fileName, LocalBackend.legacySnapshotName, LocalBackend.legacyJournalName].sorted())

    backend.setFollowing(zappa, true) { _ in }
    try loop.runOnce(wait: false)
    #expect(backend.compactionCount == 1)
    #expect(try temp.names() == [Journal.fileName])
    #expect(try temp.journal() == journalLine(adele, true) + journalLine(zappa, true) + journalLine(fabric, true))
    let again = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(again.followCount == 3)
  }

  @Test func aCrashDuringTheMoveIntoTheJournalChangesNothing() throws {
    // A crash after the journal was written, before the earlier files were removed,
    // leaves both: reading the earlier files, then the journal, gives the same follows.
    let temp = try LocalBackendTestFolder()
    let journal = journalLine(banksy, true) + journalLine(adele, true) + journalLine(banksy, false)
    try temp.write(LocalBackend.legacyJournalName, journal)
    try temp.write(Journal.fileName, journalLine(adele, true))
    let backend = try LocalBackend(loop: try EventLoop(clock: ManualClock()), folder: temp.folder)
    #expect(backend.isFollowing(adele) && !backend.isFollowing(banksy))
    #expect(backend.followCount == 1)
  }

  @Test(arguments: [
    #"{"k":"artist","i":"zappa","f":true}"#,
    #"{"k":"artist","i":"za"#,
    #"{"k":"artist","i":"zappa","f":tru"# + "\n",
    "garbage\n",
  ])
  func aTornLastLineIsIgnored(tail: String) throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(Journal.fileName, journalLine(banksy, true) + tail)
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(backend.isFollowing(banksy))
    #expect(!backend.isFollowing(zappa))
    #expect(backend.followCount == 1)

    // The first commit rewrites the journal (the torn line must not glue itself to an
    // append); appends go on normally after it.
    backend.setFollowing(adele, true) { _ in }
    try loop.runOnce(wait: false)
    #expect(backend.compactionCount == 1)
    #expect(try temp.journal() == journalLine(adele, true) + journalLine(banksy, true))
    backend.setFollowing(zappa, true) { _ in }
    try loop.runOnce(wait: false)
    #expect(try temp.journal() == journalLine(adele, true) + journalLine(banksy, true) + journalLine(zappa, true))
  }

  @Test func unreadableLinesInTheMiddleAreSkipped() throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(
      Journal.fileName,
      journalLine(banksy, true) + "garbage\n" + #"{"k":"artist","i":"zappa"}"# + "\n"
        + #"{"k":"artist","i":"zappa","f":"yes"}"# + "\n" + #"{"k":"artist","i":"zap"# + "\n"
        + journalLine(adele, true))
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(backend.isFollowing(banksy))
    #expect(backend.isFollowing(adele))
    #expect(!backend.isFollowing(zappa))
    #expect(backend.followCount == 2)
  }

  @Test func idsThatNeedEscapingRoundTrip() throws {
    let temp = try LocalBackendTestFolder()
    let odd = [
      EntityKey(kind: "artist", id: #"quote"back\slash"#), EntityKey(kind: "artist", id: "line\nbreak\ttab"),
      // (A kind is ASCII, as requests are checked; a line with another is not replayed.)
      EntityKey(kind: "label", id: "Björk ✓"),
    ]
    do {
      let loop = try EventLoop(clock: ManualClock())
      let backend = try LocalBackend(loop: loop, folder: temp.folder)
      for key in odd { backend.setFollowing(key, true) { _ in } }
      try loop.runOnce(wait: false)
      #expect(try temp.journal()?.split(separator: "\n").count == 3)
    }
    let loop = try EventLoop(clock: ManualClock())
    // From the journal, then from the one its compaction wrote.
    for _ in 0..<2 {
      let backend = try LocalBackend(loop: loop, folder: temp.folder)
      defer { try? backend.compact() }
      #expect(odd.allSatisfy { backend.isFollowing($0) })
      #expect(backend.followCount == 3)
    }
  }

  @Test func theJournalIsCompactedOnceItOutgrowsTheFollows() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    let keepers = (0..<10).map { EntityKey(kind: "artist", id: "k\($0)") }
    let passing = (0..<500).map { EntityKey(kind: "artist", id: "t\($0)") }
    for key in keepers + passing { backend.setFollowing(key, true) { _ in } }
    try loop.runOnce(wait: false)
    // 510 lines for 510 follows: below max(1000, 2 × 510).
    #expect(backend.journalLines == 510)
    #expect(backend.compactionCount == 0)

    for key in passing { backend.setFollowing(key, false) { _ in } }
    try loop.runOnce(wait: false)
    // 1010 lines for 10 follows: past max(1000, 2 × 10), so compacted after this save.
    #expect(backend.saveCount == 2)
    #expect(backend.compactionCount == 1)
    #expect(backend.journalLines == 10)
    let compacted = keepers.map { journalLine($0, true) }.joined()
    #expect(try temp.journal() == compacted)
    #expect(backend.journal.bytesCompacted == compacted.utf8.count)

    backend.setFollowing(banksy, true) { _ in }
    try loop.runOnce(wait: false)
    #expect(try temp.journal() == compacted + journalLine(banksy, true))
    #expect(backend.journalLines == 11)
    #expect(backend.compactionCount == 1)

    let again = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(again.followCount == 11)
    #expect(again.isFollowing(banksy) && keepers.allSatisfy { again.isFollowing($0) })
    #expect(!passing.contains { again.isFollowing($0) })
  }

  @Test func compactCommitsTheChangesOfTheIteration() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    backend.setFollowing(banksy, true) { _ in }
    try loop.runOnce(wait: false)
    let follow = Answer<FollowAnswer>()
    backend.setFollowing(adele, true, completion: follow.callAsFunction)
    backend.setFollowing(banksy, false) { _ in }
    try backend.compact()
    #expect(backend.compactionCount == 1)
    #expect(try temp.journal() == journalLine(adele, true))
    #expect(follow.value == true)

    try loop.runOnce(wait: false)
    #expect(try temp.journal() == journalLine(adele, true))
    let again = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(again.isFollowing(adele) && !again.isFollowing(banksy))
    #expect(again.followCount == 1)
  }

  @Test(arguments: [
    "not json at all",
    "",
    "[1,2,3]",
    #"{"version":2,"follows":{}}"#,
    #"{"follows":{"artist":["a"]}}"#,
    #"{"version":1,"follows":{"artist":"banksy"}}"#,
    #"{"version":1,"follows":{"artist":[1]}}"#,
    #"{"version":1,"follows":{"artist":["banksy"]"#,
  ])
  func aCorruptFileIsKeptAsideAndTheStoreStartsEmpty(content: String) throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(LocalBackend.legacySnapshotName, content)
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(backend.followCount == 0)
    #expect(try temp.names() == ["local-follows.json.corrupt-1", Journal.fileName].sorted())
    #expect(try temp.text("local-follows.json.corrupt-1") == content)

    // The store works, and a second corrupt file does not overwrite the first.
    backend.setFollowing(banksy, true) { _ in }
    try loop.runOnce(wait: false)
    #expect(try temp.names() == ["local-follows.json.corrupt-1", Journal.fileName].sorted())
    try temp.write(LocalBackend.legacySnapshotName, "{")
    let again = try LocalBackend(loop: loop, folder: temp.folder)
    // The journal's follows are kept.
    #expect(again.followCount == 1)
    #expect(again.isFollowing(banksy))
    #expect(
      try temp.names() == ["local-follows.json.corrupt-1", "local-follows.json.corrupt-2", Journal.fileName].sorted())
  }

  @Test func atomicWritesLeaveNoTemporaryFiles() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    for i in 0..<5 {
      backend.setFollowing(EntityKey(kind: "artist", id: "a\(i)"), true) { _ in }
      try loop.runOnce(wait: false)
      #expect(try temp.names() == [Journal.fileName])
    }
    #expect(backend.saveCount == 5)
    try backend.compact()
    #expect(try temp.names() == [Journal.fileName])

    try temp.folder.replace("other.json", with: Array("{}".utf8))
    #expect(try temp.names() == [Journal.fileName, "other.json"])
    #expect(try temp.text("other.json") == "{}")
  }

  @Test func temporariesOfStoppedProcessesAreRemovedOthersKept() throws {
    let temp = try LocalBackendTestFolder()
    // Beyond the kernel's largest pid: no such process.
    try temp.write(".local-follows.json.tmp-99999999", "half")
    try temp.write(".local-follows.json.tmp-\(Process.id)", "mine")
    try temp.write("notes.tmp-1", "not ours")
    let loop = try EventLoop(clock: ManualClock())
    _ = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(try temp.names() == [".local-follows.json.tmp-\(Process.id)", Journal.fileName, "notes.tmp-1"])
  }

  @Test func aFailedAppendRevertsExactlyThatIteration() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    backend.setFollowing(banksy, true) { _ in }
    try loop.runOnce(wait: false)

    // A folder where the journal must be makes the next append fail.
    let journalPath = temp.folder.file(Journal.fileName)
    try FileSystem.removeFile(journalPath)
    try FileSystem.makeFolders(journalPath)
    let calls: [(EntityKey, Bool)] = [(adele, true), (banksy, false), (zappa, true), (zappa, false), (fabric, false)]
    let answers = calls.map { key, following in
      let answer = Answer<FollowAnswer>()
      backend.setFollowing(key, following, completion: answer.callAsFunction)
      return answer
    }
    let fetch = Answer<FollowAnswer>()
    let list = Answer<[EntityKey]>()
    backend.fetchFollowing(adele, completion: fetch.callAsFunction)
    backend.followed(kind: "artist", completion: list.callAsFunction)
    try loop.runOnce(wait: false)
    for answer in answers {
      guard case .failure(let failure)? = answer.result else {
        Issue.record("expected a failure, got \(String(describing: answer.result))")
        continue
      }
      #expect(failure.isRetryable)
    }
    #expect(fetch.value == false)
    #expect(list.value == [banksy])
    #expect(backend.isFollowing(banksy))
    #expect(!backend.isFollowing(adele) && !backend.isFollowing(zappa) && !backend.isFollowing(fabric))
    #expect(backend.followCount == 1)
    #expect(backend.saveCount == 1)

    // Put the journal back as a failed append may have left it: some of its lines
    // complete (a write that went through before its fsync failed), then a fragment.
    FileSystem.removeTree(journalPath)
    let left =
      journalLine(banksy, true) + journalLine(adele, true) + journalLine(banksy, false) + journalLine(zappa, true)
      + #"{"k":"artist","i":"za"#
    try temp.write(Journal.fileName, left)

    // The next commit rewrites the journal (the one it appended to lost its name), so
    // the stray lines cannot win on load.
    let follow = Answer<FollowAnswer>()
    backend.setFollowing(fabric, true, completion: follow.callAsFunction)
    try loop.runOnce(wait: false)
    #expect(follow.value == true)
    #expect(backend.saveCount == 2)
    #expect(try temp.journal() == journalLine(banksy, true) + journalLine(fabric, true))

    let again = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(again.isFollowing(banksy) && again.isFollowing(fabric))
    #expect(!again.isFollowing(adele) && !again.isFollowing(zappa))
    #expect(again.followCount == 2)
  }

  @Test func aFailedWriteFailsTheCallsAndKeepsTheSavedState() throws {
    let temp = try LocalBackendTestFolder()
    let disk = FullDisk()
    var folder = temp.folder
    folder.observer = disk
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: folder)
    backend.setFollowing(banksy, true) { _ in }
    try loop.runOnce(wait: false)

    disk.isFull = true
    let follow = Answer<FollowAnswer>()
    backend.setFollowing(adele, true, completion: follow.callAsFunction)
    try loop.runOnce(wait: false)
    guard case .failure(let failure)? = follow.result else {
      Issue.record("expected a failure, got \(String(describing: follow.result))")
      return
    }
    #expect(failure.isRetryable)
    #expect(!backend.isFollowing(adele))
    #expect(backend.isFollowing(banksy))
    #expect(backend.saveCount == 1)

    disk.isFull = false
    backend.setFollowing(fabric, true) { _ in }
    try loop.runOnce(wait: false)
    #expect(backend.saveCount == 2)
    #expect(try temp.journal() == journalLine(banksy, true) + journalLine(fabric, true))
    let again = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(again.isFollowing(banksy) && again.isFollowing(fabric) && !again.isFollowing(adele))
  }

  @Test func savesWriteInProportionToTheirChangesNotToTheFollows() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    func key(_ n: Int) -> EntityKey { EntityKey(kind: "artist", id: "e\(n)") }
    // 20,000 follows made in 200 iterations of 100…
    var next = 0
    for _ in 0..<200 {
      for _ in 0..<100 {
        backend.setFollowing(key(next), true) { _ in }
        next += 1
      }
      try loop.runOnce(wait: false)
    }
    #expect(backend.followCount == 20_000)
    #expect(backend.saveCount == 200)
    #expect(backend.compactionCount == 0)
    // …then 100 iterations that each unfollow the 150 oldest and follow 150 new ones,
    // which outgrows max(1000, 2 × 20,000) lines once (at 40,100 lines).
    var oldest = 0
    for _ in 0..<100 {
      for _ in 0..<150 {
        backend.setFollowing(key(oldest), false) { _ in }
        backend.setFollowing(key(next), true) { _ in }
        oldest += 1
        next += 1
      }
      try loop.runOnce(wait: false)
    }
    #expect(backend.followCount == 20_000)
    #expect(backend.saveCount == 300)
    #expect(backend.compactionCount == 1)
    #expect(backend.journalLines == 20_000 + 33 * 300)
    // 50,000 changes. A line here is about 38 bytes and a snapshot entry 9; saving the
    // whole state on every save (as a snapshot per save would) writes about 36 MB.
    let changes = 20_000 + 100 * 300
    let written = backend.journal.bytesAppended + backend.journal.bytesCompacted
    #expect(written < changes * 64, "\(written) bytes written for \(changes) changes")
    #expect(try temp.journal()?.utf8.count ?? 0 < changes * 64)

    let again = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(again.followCount == 20_000)
    #expect(again.isFollowing(key(next - 1)) && again.isFollowing(key(oldest)))
    #expect(!again.isFollowing(key(oldest - 1)) && !again.isFollowing(key(0)))
  }

  // MARK: StateFolder

  @Test func stateFolderResolvesStateDirThenXDGStateHomeThenHome() throws {
    func env(_ values: [String: String]) -> (String) -> String? { { values[$0] } }
    #expect(try StateFolder.resolve(stateDir: "/s", environment: env(["XDG_STATE_HOME": "/x", "HOME": "/h"])) == "/s")
    #expect(
      try StateFolder.resolve(stateDir: nil, environment: env(["XDG_STATE_HOME": "/x", "HOME": "/h"])) == "/x/netmodel")
    #expect(
      try StateFolder.resolve(stateDir: nil, environment: env(["XDG_STATE_HOME": "/x/", "HOME": "/h"])) == "/x/netmodel"
    )
    #expect(try StateFolder.resolve(stateDir: nil, environment: env(["HOME": "/h"])) == "/h/.local/state/netmodel")
    // Empty or relative XDG_STATE_HOME is invalid by the XDG specification.
    #expect(
      try StateFolder.resolve(stateDir: nil, environment: env(["XDG_STATE_HOME": "", "HOME": "/h"]))
        == "/h/.local/state/netmodel")
    #expect(
      try StateFolder.resolve(stateDir: nil, environment: env(["XDG_STATE_HOME": "rel", "HOME": "/h"]))
        == "/h/.local/state/netmodel")
    #expect(try StateFolder.resolve(stateDir: "", environment: env(["HOME": "/h"])) == "/h/.local/state/netmodel")
    // A relative HOME is not taken either: the password database's home is.
    if let home = Process.passwordDatabaseHome() {
      #expect(
        try StateFolder.resolve(stateDir: nil, environment: env(["HOME": "rel/home"]))
          == home + (home.hasSuffix("/") ? "" : "/") + ".local/state/netmodel")
    }
  }

  @Test func stateFolderIsCreatedWithPrivateParents() throws {
    let temp = try LocalBackendTestFolder()
    let folder = try StateFolder(stateDir: nil, environment: { $0 == "XDG_STATE_HOME" ? temp.path + "/a/b" : nil })
    #expect(folder.path == temp.path + "/a/b/netmodel")
    #expect(FileSystem.isFolder(folder.path))
    for path in [temp.path + "/a", temp.path + "/a/b", folder.path] {
      let fd = try FileDescriptor.open(path, .readOnly, options: .directory)
      fd.close()
    }
    #expect(try modeOf(folder.path) == 0o700)
    #expect(try modeOf(temp.path + "/a") == 0o700)
    // Existing: fine, and left as it is.
    _ = try StateFolder(path: folder.path)
    // A file in the way is an error.
    try temp.write("file", "x")
    #expect(throws: Errno.self) { try StateFolder(path: temp.path + "/file") }
  }

  @Test func stateFolderReadAnswersNilForAMissingFile() throws {
    let temp = try LocalBackendTestFolder()
    #expect(try temp.folder.read("missing") == nil)
    try temp.folder.replace("x", with: [1, 2, 3])
    #expect(try temp.folder.read("x") == [1, 2, 3])
    try temp.folder.replace("x", with: [])
    #expect(try temp.folder.read("x") == [])
  }

  /// The lock holds this process's pid alone, written over a longer one a crashed
  /// owner left; the next server is told the owner's pid, and "?" for a lock file that
  /// holds anything but digits (escape sequences that would reach a terminal).
  @Test func theLockHoldsThePidAndTheRefusalTellsOnlyDigitsFromIt() throws {
    let temp = try LocalBackendTestFolder()
    try temp.write("lock", "123456789012345")
    let lock = try temp.folder.lockExclusively()
    #expect(try temp.text("lock") == String(Process.id))
    let refused = #expect(throws: StateFolder.InUse.self) { try temp.folder.lockExclusively() }
    #expect(refused?.pid == String(Process.id))
    try temp.write("lock", "\u{1B}]0;owned\u{07}")
    let hostile = #expect(throws: StateFolder.InUse.self) { try temp.folder.lockExclusively() }
    #expect(hostile?.pid == "?")
    lock.close()
  }
}

private func modeOf(_ path: String) throws -> UInt32 { UInt32(try FileSystem.permissions(path)) }
