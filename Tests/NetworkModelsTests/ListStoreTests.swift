import EventLoop
import NetworkModels
import Testing

/// A backend with one paged list, `artists`, whose page answers the test gives by
/// hand: the list store's behaviour between the calls is what is tested.
final class PagedBackend: ModelBackend, ListSource {
  var pages: [(request: ListPageRequest, complete: (Result<ListPage, FollowFailure>) -> Void)] = []
  let inner = ScriptedBackend()

  func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    inner.setFollowing(key, following, completion: completion)
  }
  func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    inner.fetchFollowing(key, completion: completion)
  }
  var capabilities: BackendCapabilities { BackendCapabilities(lists: self) }
  func listDescription(_ name: String) -> ListDescription? {
    name == "artists" ? ListDescription(dependsOn: ["artist"]) : nil
  }
  func fetchListPage(_ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void) {
    pages.append((request, completion))
  }

  /// Answers the oldest page request with ten artists from `start`, and a next page
  /// token unless `last`.
  func answer(start: Int, last: Bool = false, titles: [String]? = nil) {
    let (_, complete) = pages.removeFirst()
    let items = (start..<start + 10).map { index in
      ListItem(
        key: EntityKey(kind: "artist", id: "a\(index)"), following: index % 2 == 0,
        sectionTitle: titles?[index - start])
    }
    complete(.success(ListPage(items: items, next: last ? nil : .number(start / 10 + 2))))
  }

  func fail() {
    let (_, complete) = pages.removeFirst()
    complete(.failure(FollowFailure(.unavailable, "HTTP 503")))
  }
}

final class ListFixture {
  let loop: EventLoop
  let backend = PagedBackend()
  let store: FollowStore
  let lists: ListStore
  let key = ListKey(name: "artists")
  var changes: [ListStore.Snapshot] = []
  var subscribed = false

  init() throws {
    loop = try EventLoop(clock: ManualClock())
    store = FollowStore(loop: loop, backend: backend)
    lists = ListStore(store: store)
    store.onChange = { [unowned self] state in self.lists.entityChanged(state.key) }
    store.onConfirmed = { [unowned self] key in self.lists.mutationConfirmed(key) }
    lists.onChange = { [unowned self] key in self.changes.append(self.lists.snapshot(key)!) }
    lists.hasSubscribers = { [unowned self] _ in self.subscribed }
  }

  @discardableResult
  func fetch(_ page: PageRequest) -> () -> ListStore.Snapshot? {
    var result: ListStore.Snapshot?
    lists.fetch(key, page: page) { result = $0 }
    return { result }
  }
}

@Suite struct ListStoreTests {
  @Test func pagingToTheEnd() throws {
    let f = try ListFixture()
    let first = f.fetch(.first)
    #expect(f.lists.snapshot(f.key)?.phase == .loading)
    #expect(f.backend.pages.first?.request.page == nil)
    f.backend.answer(start: 0)
    #expect(first()?.phase == .loaded && first()?.items.count == 10 && first()?.hasMore == true)
    let second = f.fetch(.next)
    #expect(f.backend.pages.first?.request.page == .number(2))
    #expect(f.lists.snapshot(f.key)?.items.count == 10, "items stay while the next page loads")
    f.backend.answer(start: 10, last: true)
    #expect(second()?.items.map(\.key.id) == (0..<20).map { "a\($0)" })
    #expect(second()?.hasMore == false)
    let after = f.fetch(.next)
    #expect(f.backend.pages.isEmpty, "a complete list asks for nothing more")
    #expect(after()?.items.count == 20)
    #expect(f.lists.counters.pageCalls == 2)
  }

  @Test func firstOnALoadedListAnswersFromMemory() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    let again = f.fetch(.first)
    #expect(f.backend.pages.isEmpty && again()?.items.count == 10)
  }

  @Test func aRefreshKeepsTheItemsUntilTheNewOnesArrive() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    f.fetch(.next)
    f.backend.answer(start: 10)
    let refreshed = f.fetch(.refresh)
    #expect(f.backend.pages.first?.request.page == nil)
    let during = try #require(f.lists.snapshot(f.key))
    #expect(during.phase == .loading && during.items.count == 20)
    f.backend.answer(start: 100)
    #expect(refreshed()?.items.map(\.key.id) == (100..<110).map { "a\($0)" })
  }

  @Test func aFailedPageKeepsWhatWasLoadedAndCanBeRetried() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    f.fetch(.next)
    f.backend.answer(start: 10)
    let third = f.fetch(.next)
    f.backend.fail()
    let failed = try #require(third())
    #expect(failed.phase == .failure && failed.error?.message == "HTTP 503")
    #expect(failed.items.count == 20 && failed.hasMore, "a failure never completes a list")
    let retry = f.fetch(.next)
    #expect(f.backend.pages.first?.request.page == .number(3), "the same page is asked again")
    f.backend.answer(start: 20, last: true)
    #expect(retry()?.phase == .loaded && retry()?.items.count == 30 && retry()?.error == nil)
  }

  @Test func concurrentFetchesShareOneCall() throws {
    let f = try ListFixture()
    let answers = (0..<5).map { _ in f.fetch(.first) }
    f.fetch(.next)
    #expect(f.backend.pages.count == 1)
    f.backend.answer(start: 0)
    #expect(answers.allSatisfy { $0()?.items.count == 10 })
    #expect(f.lists.counters.sharedFetches == 5)
  }

  @Test func sectionsAreRunsOfEqualTitles() throws {
    let f = try ListFixture()
    let loaded = f.fetch(.first)
    f.backend.answer(start: 0, titles: ["A", "A", "A", "B", "C", "C", "C", "C", "D", "D"])
    let sections = try #require(loaded()).sections
    #expect(sections.map(\.title) == ["A", "B", "C", "D"])
    #expect(sections.map(\.start) == [0, 3, 4, 8])
    #expect(sections.map(\.count) == [3, 1, 4, 2])
  }

  @Test func theListsAnswerSeedsTheEntityStore() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    #expect(f.store.state(EntityKey(kind: "artist", id: "a2")).confirmed == true)
    #expect(f.store.state(EntityKey(kind: "artist", id: "a3")).confirmed == false)
  }

  @Test func aFollowShowsInTheListAtOnce() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    let before = try #require(f.lists.snapshot(f.key))
    f.changes.removeAll()
    f.store.setFollowing(EntityKey(kind: "artist", id: "a3"), true)
    #expect(f.changes.count == 1, "one notification for the list")
    // The entity's change took the version before the list's: one count orders both.
    #expect(f.changes.last!.version == f.store.state(EntityKey(kind: "artist", id: "a3")).version + 1)
    #expect(f.changes.last!.version > before.version)
    #expect(f.store.state(EntityKey(kind: "artist", id: "a3")).following == true)
    // An entity not in the list changes nothing of it.
    f.store.setFollowing(EntityKey(kind: "artist", id: "zzz"), true)
    #expect(f.changes.count == 1)
  }

  @Test func aConfirmedFollowRefetchesDependentListsThatHaveSubscribers() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    f.subscribed = true
    f.store.setFollowing(EntityKey(kind: "artist", id: "new"), true)
    #expect(f.backend.pages.isEmpty, "not before the backend confirmed it")
    f.backend.inner.succeed()
    #expect(f.backend.pages.count == 1 && f.backend.pages.first?.request.page == nil)
    #expect(f.lists.counters.invalidations == 1)
  }

  @Test func aListScrolledFarKeepsItsLengthWhenRefetched() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    f.fetch(.next)
    f.backend.answer(start: 10)
    f.fetch(.next)
    f.backend.answer(start: 20)
    f.subscribed = true
    f.store.setFollowing(EntityKey(kind: "artist", id: "new"), true)
    f.backend.inner.succeed()
    f.changes.removeAll()
    f.backend.answer(start: 0)
    #expect(f.backend.pages.first?.request.page == .number(2), "pages are fetched again up to the length it had")
    f.backend.answer(start: 10)
    f.backend.answer(start: 20)
    #expect(f.changes.allSatisfy { $0.items.count == 30 }, "never shown shorter")
    #expect(f.changes.last?.phase == .loaded && f.backend.pages.isEmpty)
  }

  @Test func withoutSubscribersAnOutOfDateListIsFetchedWhenNextAskedFor() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    f.store.setFollowing(EntityKey(kind: "artist", id: "new"), true)
    f.backend.inner.succeed()
    #expect(f.backend.pages.isEmpty)
    f.fetch(.first)
    #expect(f.backend.pages.count == 1, "stale: the first page is fetched again")
    // Follows of another kind do not touch it.
    f.backend.answer(start: 0)
    f.store.setFollowing(EntityKey(kind: "gene", id: "pop"), true)
    f.backend.inner.succeed()
    f.fetch(.first)
    #expect(f.backend.pages.isEmpty)
  }

  @Test func anUnknownListIsRefused() throws {
    let f = try ListFixture()
    #expect(!f.lists.fetch(ListKey(name: "nope"), page: .first) { _ in })
    #expect(f.lists.snapshot(ListKey(name: "nope")) == nil)
  }
}
