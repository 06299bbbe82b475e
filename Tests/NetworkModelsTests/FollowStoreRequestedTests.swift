import EventLoop
import NetworkModels
import Testing

/// A follow that the backend answers with a request awaiting approval (a locked
/// Mastodon account): settled as a request, never shown as a follow.
@Suite struct FollowStoreRequestedTests {
  /// A follow of `artist` answered "requested".
  private func requested(intentLog: IntentLog? = nil) throws -> StoreFixture {
    let f = try StoreFixture(intentLog: intentLog)
    f.store.setFollowing(artist, true)
    f.backend.answer(with: .requested)
    return f
  }

  @Test func aFollowAnsweredRequestedSettlesAsARequestNotAFollow() throws {
    let log = MemoryIntentLog()
    let f = try requested(intentLog: log)
    let state = f.store.state(artist)
    #expect(state.following == false && state.confirmed == false)
    #expect(state.requested && !state.pending && state.error == nil)
    #expect(f.seen.last == state)
    #expect(log.count == 0)
    try f.advance(ms: 5_000)
    #expect(f.backend.calls == [.set(artist, true)])
  }

  @Test func aSecondFollowOfARequestedEntitySendsNothing() throws {
    let f = try requested()
    let before = f.store.state(artist)
    var settled: EntityState?
    #expect(f.store.setFollowing(artist, true) { settled = try? $0.get() } == before)
    #expect(settled == before)
    #expect(f.backend.calls.count == 1)
  }

  @Test func anUnfollowWithdrawsTheRequest() throws {
    let f = try requested()
    f.store.setFollowing(artist, false)
    #expect(f.backend.calls.last == .set(artist, false))
    f.backend.succeed()
    let state = f.store.state(artist)
    #expect(!state.requested && state.following == false && state.confirmed == false && !state.pending)
  }

  @Test func aReadSayingFollowingIsTheApprovalConfirmed() throws {
    let f = try requested()
    var read: EntityState?
    f.store.read(artist, refresh: true, maxAgeMs: 0) { read = try? $0.get() }
    f.backend.answer(with: .following)
    #expect(read?.following == true && read?.confirmed == true && read?.requested == false)
  }

  @Test func aReadSayingNotFollowingClearsTheRequest() throws {
    let f = try requested()
    f.store.read(artist, refresh: true, maxAgeMs: 0) { _ in }
    f.backend.answer(with: .notFollowing)
    let state = f.store.state(artist)
    #expect(!state.requested && state.confirmed == false)
  }

  @Test func aCachedReadShowsTheRequestUntilItIsOld() throws {
    let f = try requested()
    var read: EntityState?
    f.store.read(artist, maxAgeMs: 60_000) { read = try? $0.get() }
    #expect(read?.requested == true)
    #expect(f.backend.waitingCount == 0)
  }

  @Test func anUnfollowAskedWhileTheFollowIsInFlightIsSentAfterARequest() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.store.setFollowing(artist, false)
    f.backend.answer(with: .requested)
    #expect(f.backend.calls == [.set(artist, true), .set(artist, false)])
    f.backend.succeed()
    let state = f.store.state(artist)
    #expect(!state.requested && state.confirmed == false && !state.pending)
  }

  @Test func aListNamingTheEntityFollowedIsTheApproval() throws {
    let f = try requested()
    f.store.observe(artist, following: false)
    #expect(f.store.state(artist).requested)
    f.store.observe(artist, following: true)
    let state = f.store.state(artist)
    #expect(!state.requested && state.confirmed == true && state.following == true)
  }
}
