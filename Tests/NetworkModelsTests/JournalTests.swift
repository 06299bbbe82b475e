import EventLoop
import NetworkModels
import Posix
import Testing

/// Counts the fsyncs made in a state folder.
private final class FsyncCounter: StateFileObserver, @unchecked Sendable {
  var syncs = 0
  func willPerform(_ operation: StateFileOperation) throws(Errno) {
    if case .sync = operation { syncs += 1 }
  }
}

private func k(_ id: String) -> EntityKey { EntityKey(kind: "artist", id: id) }

/// The journal shared by the outbox and the local backend (issue 13, part 3).
@Suite struct JournalTests {
  /// A turn as the service makes it: the intent and the follow are made durable by the
  /// one commit at its end, which also confirms the follow; the settlement that follows
  /// needs no fsync of its own.
  @Test func aTurnWithAnIntentAndAFollowCostsOneFsync() throws {
    let temp = try LocalBackendTestFolder()
    let counter = FsyncCounter()
    var folder = temp.folder
    folder.observer = counter
    let loop = try EventLoop(clock: ManualClock())
    let journal = try Journal(folder: folder)
    let backend = try LocalBackend(loop: loop, journal: journal)
    let outbox = try Outbox(journal: journal)
    for (turn, id) in ["a", "b", "c"].enumerated() {
      outbox.record(k(id), wanted: true)
      var confirmed = false
      backend.setFollowing(k(id), true) { result in
        confirmed = (try? result.get()) == true
        outbox.record(k(id), wanted: nil)
      }
      #expect(outbox.needsCommit)
      guard case .success = outbox.commitOrTakeBack() else {
        Issue.record("the commit failed")
        return
      }
      #expect(confirmed, "confirmed by the turn's commit")
      #expect(!outbox.needsCommit, "a settlement alone waits for no fsync")
      try loop.runOnce(wait: false)
      if case .failure = outbox.commitOrTakeBack() { Issue.record("the settlement's write failed") }
      #expect(counter.syncs == turn + 1)
    }
    let lines = try #require(try temp.text(Journal.fileName)).split(separator: "\n").suffix(4).map(String.init)
    let expected: [String] = [
      #"{"k":"artist","i":"b","w":null}"#, #"{"k":"artist","i":"c","w":true}"#,
      #"{"k":"artist","i":"c","f":true}"#, #"{"k":"artist","i":"c","w":null}"#,
    ]
    #expect(lines == expected)
    let reopened = try Journal(folder: temp.folder)
    let again = try LocalBackend(loop: loop, journal: reopened)
    #expect(try Outbox(journal: reopened).count == 0)
    #expect(again.followCount == 3)
  }

  /// A clean stop compacts only a journal that a compaction would change: a session that
  /// followed nothing costs it no fsync.
  @Test func aJournalKnowsWhenItIsAlreadyCompact() throws {
    let temp = try LocalBackendTestFolder()
    let journal = try Journal(folder: temp.folder)
    let outbox = try Outbox(journal: journal)
    #expect(journal.isCompact, "made empty")
    outbox.record(k("a"), wanted: true)
    #expect(!journal.isCompact, "a record buffered")
    guard case .success = outbox.commitOrTakeBack() else {
      Issue.record("the commit failed")
      return
    }
    #expect(!journal.isCompact, "a line appended")
    try journal.compact()
    #expect(journal.isCompact, "compacted")
    try temp.folder.remove(Journal.fileName)
    #expect(!journal.isCompact, "the file lost its name: a compaction writes it again")
    try journal.compact()
    #expect(try Outbox(journal: try Journal(folder: temp.folder)).count == 1)
    let reread = try Journal(folder: temp.folder)
    #expect(!reread.isCompact, "lines read at start: not known to be compact")
    try temp.folder.remove(Journal.fileName)
    #expect(try Journal(folder: temp.folder).isCompact, "read empty")
  }

  /// Lines no open part reads (the local backend's, when only the outbox is open) are
  /// kept by a compaction.
  @Test func aCompactionKeepsTheLinesOfPartsNotOpen() throws {
    let temp = try LocalBackendTestFolder()
    let follow = #"{"k":"artist","i":"kept","f":true}"# + "\n"
    try temp.write(Journal.fileName, follow + #"{"k":"artist","i":"a","w":true}"# + "\n")
    let outbox = try Outbox(folder: temp.folder)
    #expect(outbox.count == 1)
    try outbox.compact()
    #expect(try temp.text(Journal.fileName) == #"{"k":"artist","i":"a","w":true}"# + "\n" + follow)
    let backend = try LocalBackend(loop: try EventLoop(clock: ManualClock()), folder: temp.folder)
    #expect(backend.isFollowing(k("kept")))
  }

  /// Issue 25, item 11: before the fix, a line with an id no request may name was
  /// replayed (and sent); now it is kept aside and left out of the next rewrite.
  @Test func linesARequestCouldNotMakeAreKeptAsideNotReplayed() throws {
    let temp = try LocalBackendTestFolder()
    let long = String(repeating: "x", count: 257)
    let lines = [
      #"{"k":"artist","i":"a","w":true}"#, #"{"k":"artist","i":"\#(long)","w":true}"#,
      #"{"k":"Artist","i":"b","w":true}"#, #"{"k":"artist","i":"c","w":"yes"}"#,
      #"{"k":"artist","i":"d","f":true}"#, #"{"k":"artist","i":"","f":true}"#,
    ]
    try temp.folder.replace(Journal.fileName, with: Array((lines.joined(separator: "\n") + "\n").utf8))
    let loop = try EventLoop(clock: ManualClock())
    let journal = try Journal(folder: temp.folder)
    let backend = try LocalBackend(loop: loop, journal: journal)
    let outbox = try Outbox(journal: journal)
    #expect(outbox.unsettledIntents().map(\.0.id) == ["a"])
    #expect(backend.isFollowing(k("d")) && backend.followCount == 1)
    let aside = try temp.folder.read("journal.log.invalid-1").map { String(decoding: $0, as: UTF8.self) }
    #expect(aside == [lines[5], lines[1], lines[2], lines[3]].joined(separator: "\n") + "\n")
    try journal.compact()
    let rewritten = try temp.folder.read(Journal.fileName).map { String(decoding: $0, as: UTF8.self) } ?? ""
    #expect(!rewritten.contains(long) && !rewritten.contains("Artist") && !rewritten.contains("yes"))
  }
}
