import EventLoop
import NetworkModels
import Testing

/// A list asked in one world (environment, values) and answered after another became
/// active: the late page is not kept, nothing of the old world is shown, and whoever
/// waited gets the new world's page.
@Suite struct ListStoreWorldTests {
  @Test func aPageOfTheOldEnvironmentAnsweredLateIsNotKept() throws {
    let f = try ListFixture()
    let waited = f.fetch(.first)
    #expect(f.backend.pages.count == 1)
    f.lists.environmentChanged()
    // The load starts over at once, for the caller still waiting.
    #expect(f.backend.pages.count == 2)
    f.backend.answer(start: 0)  // the old environment's page, late
    #expect(waited() == nil)
    #expect(f.lists.snapshot(f.key)?.phase == .loading)
    #expect(!f.lists.holds(EntityKey(kind: "artist", id: "a0")))
    f.backend.answer(start: 100, last: true)
    #expect(waited()?.items.first?.key.id == "a100" && waited()?.items.count == 10)
  }

  @Test func aSwitchShowsNothingTheOldEnvironmentLoaded() throws {
    let f = try ListFixture()
    f.fetch(.first)
    f.backend.answer(start: 0)
    f.lists.environmentChanged()
    // Nobody listens or waits: idle and empty, not the old items marked out of date.
    let after = f.lists.snapshot(f.key)
    #expect(after?.phase == .idle && after?.items.isEmpty == true && f.backend.pages.isEmpty)
    #expect(!f.lists.holds(EntityKey(kind: "artist", id: "a0")))
    let again = f.fetch(.first)
    f.backend.answer(start: 50, last: true)
    #expect(again()?.items.first?.key.id == "a50")
  }

  @Test func aChangedValueStartsOverOnlyTheListsThatNameIt() throws {
    let f = try ListFixture()
    f.subscribed = true
    f.fetch(.first)
    f.backend.answer(start: 0)
    let versionBefore = f.lists.snapshot(f.key)!.version
    f.lists.valuesChanged(["another"])
    #expect(f.backend.pages.isEmpty && f.lists.snapshot(f.key)?.items.count == 10)
    f.lists.valuesChanged(["artists"])
    // Subscribed: fetched again from the first page, showing none of the old items meanwhile.
    #expect(f.backend.pages.count == 1 && f.backend.pages[0].request.page == nil)
    let during = f.lists.snapshot(f.key)!
    #expect(during.phase == .loading && during.items.isEmpty && during.version > versionBefore)
  }
}
