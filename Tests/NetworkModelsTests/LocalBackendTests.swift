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
}

private let banksy = EntityKey(kind: "artist", id: "banksy")
private let adele = EntityKey(kind: "artist", id: "adele")
private let zappa = EntityKey(kind: "artist", id: "zappa")
private let fabric = EntityKey(kind: "venue", id: "fabric")

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
      let answer = Answer<Bool>()
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

    let unfollowed = Answer<Bool>()
    backend.setFollowing(banksy, false, completion: unfollowed.callAsFunction)
    try loop.runOnce(wait: false)
    #expect(unfollowed.value == false)

    let banksyState = Answer<Bool>()
    let adeleState = Answer<Bool>()
    let unknownState = Answer<Bool>()
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
    let set = Answer<Bool>()
    let unchanged = Answer<Bool>()
    let fetch = Answer<Bool>()
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
    let later = Answer<Bool>()
    backend.fetchFollowing(banksy, completion: later.callAsFunction)
    backend.setFollowing(banksy, false) { _ in }
    #expect(later.result == nil)
    try loop.runOnce(wait: false)
    #expect(later.value == true)
    #expect(!backend.isFollowing(banksy))
  }

  @Test func changesOfOneIterationAreSavedOnceAndConfirmedOnlyWhenDurable() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    var fileSeenByCompletions: [String?] = []
    for i in 0..<10 {
      backend.setFollowing(EntityKey(kind: "artist", id: "a\(i)"), true) { _ in
        fileSeenByCompletions.append(try? temp.text(LocalBackend.fileName))
      }
    }
    #expect(try temp.text(LocalBackend.fileName) == nil)
    try loop.runOnce(wait: false)
    #expect(backend.saveCount == 1)
    let expected =
      #"{"version":1,"follows":{"artist":["a0","a1","a2","a3","a4","a5","a6","a7","a8","a9"]}}"# + "\n"
    #expect(fileSeenByCompletions == Array(repeating: expected, count: 10))

    // Nothing changed: confirmed without writing.
    let again = Answer<Bool>()
    backend.setFollowing(EntityKey(kind: "artist", id: "a3"), true, completion: again.callAsFunction)
    backend.setFollowing(banksy, false) { _ in }
    try loop.runOnce(wait: false)
    #expect(again.value == true)
    #expect(backend.saveCount == 1)

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
    let text = try temp.text(LocalBackend.fileName)
    #expect(text == #"{"version":1,"follows":{"artist":["banksy"],"venue":["fabric"]}}"# + "\n")

    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(backend.isFollowing(banksy))
    #expect(!backend.isFollowing(adele))
    let state = Answer<Bool>()
    let venues = Answer<[EntityKey]>()
    backend.fetchFollowing(fabric, completion: state.callAsFunction)
    backend.followed(kind: "venue", completion: venues.callAsFunction)
    try loop.runOnce(wait: false)
    #expect(state.value == true)
    #expect(venues.value == [fabric])
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
    try temp.write(LocalBackend.fileName, content)
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(backend.followCount == 0)
    #expect(try temp.names() == ["local-follows.json.corrupt-1"])
    #expect(try temp.text("local-follows.json.corrupt-1") == content)

    // The store works, and a second corrupt file does not overwrite the first.
    backend.setFollowing(banksy, true) { _ in }
    try loop.runOnce(wait: false)
    #expect(try temp.names() == ["local-follows.json", "local-follows.json.corrupt-1"])
    try temp.write(LocalBackend.fileName, "{")
    let again = try LocalBackend(loop: loop, folder: temp.folder)
    #expect(again.followCount == 0)
    #expect(try temp.names() == ["local-follows.json.corrupt-1", "local-follows.json.corrupt-2"])
  }

  @Test func atomicWritesLeaveNoTemporaryFiles() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    for i in 0..<5 {
      backend.setFollowing(EntityKey(kind: "artist", id: "a\(i)"), true) { _ in }
      try loop.runOnce(wait: false)
      #expect(try temp.names() == [LocalBackend.fileName])
    }
    #expect(backend.saveCount == 5)

    try temp.folder.replace("other.json", with: Array("{}".utf8))
    #expect(try temp.names() == [LocalBackend.fileName, "other.json"])
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
    #expect(try temp.names() == [".local-follows.json.tmp-\(Process.id)", "notes.tmp-1"])
  }

  @Test func aFailedSaveFailsTheCallsAndKeepsTheSavedState() throws {
    let temp = try LocalBackendTestFolder()
    let loop = try EventLoop(clock: ManualClock())
    let backend = try LocalBackend(loop: loop, folder: temp.folder)
    backend.setFollowing(banksy, true) { _ in }
    try loop.runOnce(wait: false)

    // A folder where the temporary file must go makes the save fail.
    try FileSystem.makeFolders(temp.folder.file(".local-follows.json.tmp-\(Process.id)"))
    let follow = Answer<Bool>()
    let fetch = Answer<Bool>()
    backend.setFollowing(adele, true, completion: follow.callAsFunction)
    backend.fetchFollowing(adele, completion: fetch.callAsFunction)
    try loop.runOnce(wait: false)
    guard case .failure(let failure)? = follow.result else {
      Issue.record("expected a failure, got \(String(describing: follow.result))")
      return
    }
    #expect(failure.isRetryable)
    #expect(fetch.value == false)
    #expect(!backend.isFollowing(adele))
    #expect(backend.isFollowing(banksy))
    #expect(try temp.text(LocalBackend.fileName) == #"{"version":1,"follows":{"artist":["banksy"]}}"# + "\n")
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
}

private func modeOf(_ path: String) throws -> UInt32 { UInt32(try FileSystem.permissions(path)) }
