import EventLoop
import NetworkModels
import Testing

/// The paged backend with two environments.
final class EnvironmentBackend: ModelBackend, ConfigurableBackend {
  let paged = PagedBackend()
  var inner: ScriptedBackend { paged.inner }
  private(set) var environment = "production"
  let environmentNames = ["production", "staging"]
  private(set) var token: String?

  var capabilities: BackendCapabilities { BackendCapabilities(lists: paged, environments: self) }

  func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    inner.setFollowing(key, following, completion: completion)
  }
  func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    inner.fetchFollowing(key, completion: completion)
  }
  func selectEnvironment(_ name: String) -> Bool {
    guard environmentNames.contains(name) else { return false }
    environment = name
    return true
  }
  func setAuthToken(_ token: String?) -> TokenChange {
    self.token = token
    return .changed
  }
}

/// The models over a backend, recording every change they report as text, in order.
final class ModelsFixture: ModelObserver {
  let loop: EventLoop
  let backend: ModelBackend
  lazy var models = Models(store: FollowStore(loop: loop, backend: backend), observer: self)
  var changes: [String] = []
  var heldLists: Set<ListKey> = []

  init(backend: ModelBackend) throws {
    loop = try EventLoop(clock: ManualClock())
    self.backend = backend
  }

  func modelChanged(_ change: Models.Change) {
    switch change {
    case .entity(let state):
      changes.append(
        "\(state.key) following=\(text(state.following)) confirmed=\(text(state.confirmed)) pending=\(state.pending)")
    case .list(let key):
      changes.append("\(key) \(models.lists.snapshot(key)!.phase)")
    }
  }

  func holds(_ entity: EntityKey) -> Bool { false }
  func holds(_ list: ListKey) -> Bool { heldLists.contains(list) }

  /// Follows or unfollows, returning how the mutation was answered so far.
  @discardableResult
  func set(_ key: EntityKey, _ following: Bool, awaitSettle: Bool = false) -> () -> [String] {
    var answers: [String] = []
    do {
      try models.setFollowing(key, following, awaitSettle: awaitSettle) { outcome in
        switch outcome {
        case .state(let state): answers.append("state following=\(text(state.following)) pending=\(state.pending)")
        case .failure(let failure): answers.append("failure \(failure.failure.message)")
        case .stopped(let state): answers.append("stopped pending=\(state.pending)")
        }
      }
    } catch {
      answers.append("refused \(error)")
    }
    return { answers }
  }
}

private func text(_ value: Bool?) -> String { value.map { String($0) } ?? "null" }

private let artists = ListKey(name: "artists")
private let a1 = EntityKey(kind: "artist", id: "a1")

@Suite struct ModelsTests {
  /// `artists` loaded (a1 not followed in it), and the changes of loading it forgotten.
  private func loadedList() throws -> (ModelsFixture, PagedBackend) {
    let backend = PagedBackend()
    let f = try ModelsFixture(backend: backend)
    f.models.lists.fetch(artists, page: .first) { _ in }
    backend.answer(start: 0)
    #expect(f.models.lists.snapshot(artists)?.phase == .loaded)
    f.changes = []
    return (f, backend)
  }

  @Test func oneFollowIsOneEntityChangeAndOneListChangePerStep() throws {
    let (f, backend) = try loadedList()
    let answers = f.set(a1, true)
    #expect(answers() == ["state following=true pending=true"])
    #expect(
      f.changes == [
        "artist/a1 following=true confirmed=false pending=true", "artists loaded",
      ])
    backend.inner.succeed()
    #expect(
      f.changes == [
        "artist/a1 following=true confirmed=false pending=true", "artists loaded",
        "artist/a1 following=true confirmed=true pending=false", "artists loaded",
      ])
    #expect(answers().count == 1, "answered once")
    #expect(backend.pages.isEmpty, "nobody holds the list: it is not fetched again yet")
  }

  @Test func aConfirmedFollowMakesTheListsOfItsKindOutOfDate() throws {
    let (f, backend) = try loadedList()
    f.set(a1, true)
    backend.inner.succeed()
    #expect(backend.pages.isEmpty)
    f.models.lists.fetch(artists, page: .first) { _ in }
    #expect(backend.pages.count == 1, "out of date: asked again when next fetched")
  }

  @Test func aListSomeoneHoldsIsFetchedAgainAsSoonAsAFollowIsConfirmed() throws {
    let (f, backend) = try loadedList()
    f.heldLists = [artists]
    f.set(a1, true)
    f.changes = []
    backend.inner.succeed()
    #expect(
      f.changes == [
        "artists loading", "artist/a1 following=true confirmed=true pending=false", "artists loading",
      ])
    #expect(backend.pages.count == 1 && backend.pages.first?.request.page == nil)
    backend.answer(start: 0)
    #expect(f.changes.last == "artists loaded")
  }

  @Test func anAwaitedFollowIsAnsweredOnceSettled() throws {
    let backend = ScriptedBackend()
    let f = try ModelsFixture(backend: backend)
    let answers = f.set(a1, true, awaitSettle: true)
    #expect(answers().isEmpty)
    backend.succeed()
    #expect(answers() == ["state following=true pending=false"])
  }

  @Test func stoppingAnswersTheAwaitedFollowsStillPending() throws {
    let backend = ScriptedBackend()
    let f = try ModelsFixture(backend: backend)
    let answers = f.set(a1, true, awaitSettle: true)
    f.models.stopAwaitedMutations()
    #expect(answers() == ["stopped pending=true"])
    backend.succeed()
    #expect(answers().count == 1, "not answered again")
  }

  @Test func anotherEnvironmentForgetsEveryStateRefetchesHeldListsAndAnswersAwaitedFollows() throws {
    let backend = EnvironmentBackend()
    let f = try ModelsFixture(backend: backend)
    f.heldLists = [artists]
    f.models.lists.fetch(artists, page: .first) { _ in }
    backend.paged.answer(start: 0)
    let b2 = EntityKey(kind: "artist", id: "b2")
    let awaited = f.set(b2, true, awaitSettle: true)
    f.changes = []
    f.models.switchEnvironment(from: "production", to: "staging")
    #expect(backend.environment == "staging")
    #expect(f.changes.filter { $0.hasPrefix("artist/") }.count == 11, "a0…a9 and b2")
    #expect(f.changes.contains("artist/a1 following=null confirmed=null pending=false"))
    #expect(f.changes.last == "artists loading" && backend.paged.pages.count == 1, "the held list is read again there")
    #expect(awaited().count == 1 && awaited()[0].hasPrefix("failure the environment changed to staging"))
  }

  @Test func aNewTokenSendsTheIntentsWaitingForCredentials() throws {
    let backend = EnvironmentBackend()
    let f = try ModelsFixture(backend: backend)
    f.set(a1, true)
    backend.inner.fail(0, FollowFailure(.unauthorized(status: 401), "401"))
    #expect(backend.inner.waitingCount == 0)
    f.models.setAuthToken("t0ken", resend: true)
    #expect(backend.token == "t0ken")
    #expect(backend.inner.waiting == [.set(a1, true)])
  }
}
