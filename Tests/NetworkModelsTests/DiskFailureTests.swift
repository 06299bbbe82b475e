import EventLoop
import NetworkModels
import Posix
import Testing

private func k(_ id: String) -> EntityKey { EntityKey(kind: "artist", id: id) }

/// A state folder that fails under the running process (issue 12, part 4).
@Suite struct DiskFailureTests {
  /// Before the fix, the commit appended to the unlinked file and succeeded: the
  /// intents were acknowledged and gone at the next start.
  @Test func aRemovedOutboxIsWrittenAgainWithEveryLiveIntent() throws {
    let temp = try LocalBackendTestFolder()
    let outbox = try Outbox(folder: temp.folder)
    outbox.record(k("a"), wanted: true)
    #expect(outbox.commit())
    try FileSystem.removeFile(temp.folder.file(Journal.fileName))
    outbox.record(k("b"), wanted: true)
    #expect(outbox.commit())
    let reopened = try Outbox(folder: temp.folder)
    #expect(reopened.unsettledIntents().map(\.0.id) == ["a", "b"])
  }

  @Test func aDeletedStateFolderFailsTheCommitAndTakesItsIntentsBack() throws {
    let temp = try LocalBackendTestFolder()
    let outbox = try Outbox(folder: temp.folder)
    outbox.record(k("a"), wanted: true)
    #expect(outbox.commit())
    FileSystem.removeTree(temp.path)
    outbox.record(k("b"), wanted: true)
    guard case .failure(let unsaved) = outbox.commitOrTakeBack() else {
      Issue.record("a commit into a deleted folder succeeded")
      return
    }
    #expect(unsaved.intents.map(\.key.id) == ["b"])
    #expect(outbox.unsettledIntents().map(\.0.id) == ["a"])
    // The folder is back (an operator made it again): the next commit writes all.
    _ = try StateFolder(path: temp.path)
    outbox.record(k("c"), wanted: true)
    #expect(outbox.commit())
    let reopened = try Outbox(folder: temp.folder)
    #expect(reopened.unsettledIntents().map(\.0.id) == ["a", "c"])
  }

  /// Before the fix, the save made a new journal holding only its own change, and
  /// every follow confirmed before it was gone at the next start.
  @Test func anEmptiedStateFolderGetsTheDurableFollowsBackOnTheNextSave() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    var results: [Bool] = []
    backend.setFollowing(k("a"), true) { if case .success = $0 { results.append(true) } else { results.append(false) } }
    try loop.runOnce(wait: false)
    FileSystem.removeTree(temp.path)
    backend.setFollowing(k("b"), true) { if case .success = $0 { results.append(true) } else { results.append(false) } }
    try loop.runOnce(wait: false)
    #expect(results == [true, false])  // no folder: refused
    #expect(!backend.isFollowing(k("b")))
    _ = try StateFolder(path: temp.path)
    backend.setFollowing(k("c"), true) { if case .success = $0 { results.append(true) } else { results.append(false) } }
    try loop.runOnce(wait: false)
    #expect(results == [true, false, true])
    let reopened = try LocalBackend(loop: try EventLoop(clock: ManualClock()), folder: temp.folder)
    #expect(reopened.isFollowing(k("a")) && reopened.isFollowing(k("c")) && !reopened.isFollowing(k("b")))
  }

  /// Issue 25, item 1: before the fix the call went to the backend when the mutation
  /// was asked for, before the commit that then failed, so a refused follow was done.
  @Test(arguments: [false, true])
  func aMutationWhoseCommitFailsIsNeverSent(awaitSettle: Bool) throws {
    let temp = try LocalBackendTestFolder()
    let disk = FullDisk()
    var folder = temp.folder
    folder.observer = disk
    let outbox = try Outbox(folder: folder)
    let backend = ScriptedBackend()
    let loop = try EventLoop(clock: ManualClock())
    let observer = ChangeCounter()
    let models = Models(
      store: FollowStore(loop: loop, backend: backend, intentLog: outbox), outbox: outbox, observer: observer)
    disk.isFull = true
    var answers: [String] = []
    try models.setFollowing(k("a"), true, awaitSettle: awaitSettle) { outcome in
      if case .failure(let failure) = outcome { answers.append(failure.failure.message) } else { answers.append("ok") }
    }
    #expect(backend.calls.isEmpty)  // nothing goes out before the intent is durable
    models.commitIntents()
    #expect(backend.calls.isEmpty)
    #expect(answers.count == 1 && answers[0].hasPrefix("could not save the intent"))
    #expect(models.store.state(k("a")).following == nil)
    #expect(outbox.count == 0)
    // A durable intent goes out right after its commit.
    disk.isFull = false
    try models.setFollowing(k("b"), true, awaitSettle: false) { _ in }
    #expect(backend.calls.isEmpty)
    models.commitIntents()
    #expect(backend.calls == [.set(k("b"), true)])
  }
}

private final class ChangeCounter: ModelObserver {
  var changes = 0
  func modelChanged(_ change: Models.Change) { changes += 1 }
  func holds(_ entity: EntityKey) -> Bool { false }
  func holds(_ list: ListKey) -> Bool { false }
}
