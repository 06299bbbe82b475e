import EventLoop
import NetworkModels
import Testing

let unauthorized = FollowFailure(.unauthorized(status: 401), "401 Unauthorized")

/// A 401/403 judges the credentials, not the intent (issue "An accepted intent is
/// never dropped for want of credentials").
@Suite struct CredentialsTests {
  @Test func anUnauthorizedMutationStaysPendingAndDurableUntilCredentialsChange() throws {
    let log = MemoryIntentLog()
    let f = try StoreFixture(intentLog: log)
    var answered: Result<EntityState, FollowStore.SettleFailure>?
    f.store.setFollowing(artist, true) { answered = $0 }
    f.backend.fail(0, unauthorized)
    let waiting = f.store.state(artist)
    #expect(waiting.pending && waiting.following == true)
    #expect(waiting.error == unauthorized)
    #expect(f.seen.last == waiting, "subscribers see the intent waiting")
    #expect(log.count == 1, "the intent is still in the outbox")
    #expect(f.store.waitingForCredentialsCount == 1)
    // An awaiting caller is answered now, with the state still pending.
    guard case .failure(let failure)? = answered else { Issue.record("await not answered"); return }
    #expect(failure.state.pending && failure.failure == unauthorized)
    // Nothing is sent until credentials change, whatever the time.
    try f.advance(ms: 5000)
    #expect(f.backend.waitingCount == 0)
    f.store.credentialsChanged()
    #expect(f.backend.waiting == [.set(artist, true)])
    f.backend.succeed()
    let settled = f.store.state(artist)
    #expect(settled.confirmed == true && !settled.pending && settled.error == nil)
    #expect(log.count == 0 && f.store.waitingForCredentialsCount == 0)
  }

  @Test func aSecondAwaitOnAnIntentWaitingForCredentialsIsAnsweredAtOnce() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true) { _ in }
    f.backend.fail(0, unauthorized)
    var again: Result<EntityState, FollowStore.SettleFailure>?
    f.store.setFollowing(artist, true) { again = $0 }
    guard case .failure(let failure)? = again else { Issue.record("the second await was not answered"); return }
    #expect(failure.failure == unauthorized && failure.state.pending && failure.state.following == true)
    #expect(f.backend.waitingCount == 0, "nothing is sent that would be refused again")
    // Another intent while it waits (nothing confirmed to go back to): it waits too,
    // and its caller hears so now.
    var toggled: Result<EntityState, FollowStore.SettleFailure>?
    f.store.setFollowing(artist, false) { toggled = $0 }
    guard case .failure(let other)? = toggled else { Issue.record("the toggled await was not answered"); return }
    #expect(other.failure == unauthorized && other.state.pending && other.state.following == false)
    #expect(f.backend.waitingCount == 0)
    f.store.credentialsChanged()
    #expect(f.backend.waiting == [.set(artist, false)])
  }

  @Test func aNewerIntentReplacesTheWaitingOne() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, false)
    f.backend.succeed()  // confirmed: not following
    f.store.setFollowing(artist, true)
    f.backend.fail(0, unauthorized)
    // Back to what the backend has: nothing is owed any more.
    f.store.setFollowing(artist, false)
    #expect(!f.store.state(artist).pending && f.store.waitingForCredentialsCount == 0)
    #expect(f.backend.waitingCount == 0)
    // A new intent is tried; refused, it waits, and toggles meanwhile send nothing
    // that would only be refused again.
    f.store.setFollowing(artist, true)
    f.backend.fail(0, unauthorized)
    f.store.setFollowing(artist, true)
    #expect(f.backend.waitingCount == 0 && f.store.state(artist).pending)
    f.store.credentialsChanged()
    f.backend.succeed()
    #expect(f.backend.truth[artist] == true && !f.store.state(artist).pending)
  }

  @Test func rollingBackOnUnauthorizedIsAnOptIn() throws {
    let log = MemoryIntentLog()
    let f = try StoreFixture(policy: RetryPolicy(whenUnauthorized: .rollBack), intentLog: log)
    f.store.setFollowing(artist, true)
    f.backend.fail(0, unauthorized)
    let state = f.store.state(artist)
    #expect(!state.pending && state.following == nil && state.error == unauthorized)
    #expect(log.count == 0 && f.store.waitingForCredentialsCount == 0)
  }

  @Test func aReadAnsweredUnauthorizedKeepsTheShownStateAndIsReadAgainAfterConfigure() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.backend.succeed()
    f.store.read(artist, refresh: true, maxAgeMs: 0) { _ in }
    f.backend.fail(0, unauthorized)
    let state = f.store.state(artist)
    #expect(state.following == true && state.confirmed == true && !state.pending)
    f.store.credentialsChanged()
    #expect(f.backend.waiting == [.fetch(artist)])
    f.backend.succeed()
    #expect(f.store.state(artist).error == nil)
  }

  @Test func aReplayedIntentMeetingUnauthorizedWaitsForCredentials() throws {
    let log = MemoryIntentLog()
    log.record(artist, wanted: true)
    let f = try StoreFixture(intentLog: log)
    f.store.replayIntents()
    f.backend.fail(0, unauthorized)
    #expect(f.store.state(artist).pending && log.count == 1)
    f.store.credentialsChanged()
    f.backend.succeed()
    #expect(f.backend.truth[artist] == true && log.count == 0)
  }
}
