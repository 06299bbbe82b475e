import EventLoop
import NetworkModels
import Testing

/// A newest-first list whose head moves between two pages (TanStack Query #4128): the
/// walk never shows an item twice, and a moved head walks the list again.
@Suite struct ListShiftTests {
  /// Answers the oldest page request with page `number` (of ten) of `list`.
  /// With `total`, the answer says how many items the list holds.
  func answer(_ f: ListFixture, _ list: [String], page number: Int, total: Bool = false) {
    let (_, complete) = f.backend.pages.removeFirst()
    let slice = list[min((number - 1) * 10, list.count)..<min(number * 10, list.count)]
    let items = slice.map { ListItem(key: EntityKey(kind: "artist", id: $0)) }
    complete(
      .success(
        ListPage(
          items: items, next: number * 10 < list.count ? .number(number + 1) : nil,
          total: total ? list.count : nil)))
  }

  func repeatsNothing(_ f: ListFixture) -> Bool {
    f.changes.allSatisfy { Set($0.items.map(\.key)).count == $0.items.count }
  }

  @Test func itemsAddedAtTheHeadAreNotShownTwiceAndTheListIsWalkedAgain() throws {
    let f = try ListFixture()
    var list = (0..<25).map { "a\($0)" }
    f.fetch(.first)
    answer(f, list, page: 1)
    list = ["b0", "b1", "b2"] + list
    let next = f.fetch(.next)
    answer(f, list, page: 2)
    #expect(f.lists.counters.shifts == 1)
    #expect(f.backend.pages.first?.request.page == nil, "the walk starts again from the first page")
    #expect(f.lists.snapshot(f.key)?.items.map(\.key.id) == Array(list[3..<13]), "the old items stay meanwhile")
    answer(f, list, page: 1)
    #expect(f.backend.pages.first?.request.page == .number(2), "as far as the list reached")
    answer(f, list, page: 2)
    #expect(next()?.phase == .loaded)
    #expect(next()?.items.map(\.key.id) == Array(list[0..<20]))
    #expect(repeatsNothing(f))
  }

  @Test func aHeadThatMovesAgainDuringTheSecondWalkOnlyLosesItsRepeats() throws {
    let f = try ListFixture()
    var list = (0..<25).map { "a\($0)" }
    f.fetch(.first)
    answer(f, list, page: 1)
    list = ["b0", "b1"] + list
    let next = f.fetch(.next)
    answer(f, list, page: 2)
    answer(f, list, page: 1)
    list = ["c0"] + list
    answer(f, list, page: 2)
    #expect(f.lists.counters.shifts == 2)
    #expect(f.backend.pages.isEmpty, "a second move does not start a third walk")
    #expect(next()?.items.map(\.key.id) == Array(list[1..<20]), "the new head shows at the next refresh")
    #expect(repeatsNothing(f))
  }

  @Test func itemsRemovedAtTheHeadAreFoundByTheTotalAndNoneIsSkipped() throws {
    let f = try ListFixture()
    var list = (0..<25).map { "a\($0)" }
    f.fetch(.first)
    answer(f, list, page: 1, total: true)
    list.removeFirst(3)
    let next = f.fetch(.next)
    answer(f, list, page: 2, total: true)
    #expect(f.lists.counters.shifts == 1)
    #expect(f.backend.pages.first?.request.page == nil, "walked again from the first page")
    answer(f, list, page: 1, total: true)
    answer(f, list, page: 2, total: true)
    #expect(next()?.items.map(\.key.id) == Array(list[0..<20]), "a10, a11 and a12 are not skipped")
  }

  @Test func withoutATotalARemovalLeavesNoTrace() throws {
    let f = try ListFixture()
    var list = (0..<25).map { "a\($0)" }
    f.fetch(.first)
    answer(f, list, page: 1)
    list.removeFirst(3)
    let next = f.fetch(.next)
    answer(f, list, page: 2)
    #expect(f.lists.counters.shifts == 0)
    #expect(next()?.items.count == 20, "the skip the docs tell of: a refresh finds them")
  }

  @Test func aHeadThatMovedByExactlyOnePageIsAShiftNotAPagingFailure() throws {
    let f = try ListFixture()
    var list = (0..<25).map { "a\($0)" }
    f.fetch(.first)
    answer(f, list, page: 1)
    list = (0..<10).map { "n\($0)" } + list
    let next = f.fetch(.next)
    answer(f, list, page: 2)
    #expect(f.lists.counters.pagingFailures == 0 && f.lists.counters.shifts == 1)
    answer(f, list, page: 1)
    #expect(f.backend.pages.first?.request.page == .number(2), "one page further than the list was")
    answer(f, list, page: 2)
    #expect(next()?.phase == .loaded)
    #expect(next()?.items.map(\.key.id) == Array(list[0..<20]))
    #expect(repeatsNothing(f))
  }

  @Test func theSamePageWithAnUnchangedTotalFailsAtOnce() throws {
    let f = try ListFixture()
    let list = (0..<25).map { "a\($0)" }
    let ignoring = Array(list[0..<10]) + list
    f.fetch(.first)
    answer(f, ignoring, page: 1, total: true)
    let next = f.fetch(.next)
    answer(f, ignoring, page: 2, total: true)
    #expect(next()?.phase == .failure && next()?.error?.message.contains("did not advance") == true)
    #expect(f.lists.counters.shifts == 0 && f.backend.pages.isEmpty)
  }

  @Test func aPageThatAlwaysRepeatsFailsOnceWalkedAgain() throws {
    let f = try ListFixture()
    let list = (0..<25).map { "a\($0)" }
    f.fetch(.first)
    answer(f, list, page: 1)
    // A server that ignores the page number: page 2 is page 1 again.
    let ignoring = Array(list[0..<10]) + list
    let next = f.fetch(.next)
    answer(f, ignoring, page: 2)
    answer(f, ignoring, page: 1)
    answer(f, ignoring, page: 2)
    #expect(f.backend.pages.isEmpty)
    #expect(next()?.phase == .failure && next()?.error?.message.contains("same items as the page before") == true)
    #expect(f.lists.counters.shifts == 1 && f.lists.counters.pagingFailures == 1)
    #expect(next()?.items.map(\.key.id) == Array(list[0..<10]), "what was shown stays")
  }

  @Test func idsCompareByBytes() throws {
    let f = try ListFixture()
    let list = ["caf\u{E9}"] + (0..<19).map { "a\($0)" }
    f.fetch(.first)
    answer(f, list, page: 1)
    let next = f.fetch(.next)
    answer(f, Array(list[0..<10]) + ["cafe\u{301}"] + (10..<19).map { "a\($0)" }, page: 2)
    #expect(f.lists.counters.shifts == 0, "canonically equal ids are two items")
    #expect(next()?.items.count == 20)
  }
}
