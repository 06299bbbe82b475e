import EventLoop
import NetworkModels
import Testing

let artist = EntityKey(kind: "artist", id: "banksy")

final class StoreFixture {
  let clock = ManualClock()
  let loop: EventLoop
  let backend = ScriptedBackend()
  let store: FollowStore
  var seen: [EntityState] = []

  init(
    policy: RetryPolicy = RetryPolicy(maxRetries: 3, baseDelayMs: 100, maxDelayMs: 1000), intentLog: IntentLog? = nil
  ) throws {
    loop = try EventLoop(clock: clock)
    store = FollowStore(loop: loop, backend: backend, policy: policy, intentLog: intentLog)
    store.onChange = { [unowned self] in self.seen.append($0) }
  }

  /// Moves time on in steps, running the loop, so retry timers fire.
  func advance(ms: UInt64) throws {
    for _ in 0..<ms / 10 {
      clock.advance(by: .milliseconds(10))
      try loop.runOnce(wait: false)
    }
  }
}

@Suite struct FollowStoreTests {
  @Test func anEntityNeverFetchedIsUnknownNotUnfollowed() throws {
    let f = try StoreFixture()
    let state = f.store.state(artist)
    #expect(state.following == nil)
    #expect(state.confirmed == nil)
    #expect(!state.pending)
  }

  @Test func followShowsAtOnceThenSettles() throws {
    let f = try StoreFixture()
    let optimistic = f.store.setFollowing(artist, true)
    #expect(optimistic.following == true)
    #expect(optimistic.pending)
    #expect(optimistic.confirmed == nil)
    #expect(optimistic.version == 1)
    #expect(f.seen.last == optimistic)
    #expect(f.backend.calls == [.set(artist, true)])
    f.backend.succeed()
    let settled = f.store.state(artist)
    #expect(settled.following == true && settled.confirmed == true && !settled.pending)
    #expect(settled.version == 2)
    #expect(f.seen.last == settled)
  }

  @Test func aMutationOfAKnownStateSendsNothing() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.backend.succeed()
    let before = f.store.state(artist)
    #expect(f.store.setFollowing(artist, true) == before)
    #expect(f.backend.calls.count == 1)
    #expect(f.store.counters.dedupeHits == 1)
  }

  @Test func tenQuickTogglesCostAtMostTwoCallsAndEndAsLastAsked() throws {
    for last in [true, false] {
      let f = try StoreFixture()
      for i in 0..<10 { f.store.setFollowing(artist, i % 2 == 0) }
      f.store.setFollowing(artist, last)
      while f.backend.waitingCount > 0 { f.backend.succeed() }
      #expect(f.backend.mutationCount <= 2)
      let state = f.store.state(artist)
      #expect(state.following == last && state.confirmed == last && !state.pending)
      #expect(f.backend.truth[artist] == last)
    }
  }

  @Test func transientFailuresAreRetriedWithBackoffWhilePending() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.backend.fail(0, transient)
    #expect(f.store.state(artist).pending)
    #expect(f.backend.waitingCount == 0)
    try f.advance(ms: 40)
    #expect(f.backend.waitingCount == 0, "the first retry waits at least half the base delay")
    try f.advance(ms: 100)
    #expect(f.backend.waitingCount == 1)
    f.backend.succeed()
    let state = f.store.state(artist)
    #expect(state.confirmed == true && !state.pending && state.error == nil)
    #expect(f.store.counters.retries == 1)
  }

  @Test func exhaustedRetriesRollBackToConfirmedAndSetError() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, false)
    f.backend.succeed()  // confirmed: not following
    f.store.setFollowing(artist, true)
    for _ in 0...3 {
      try f.advance(ms: 2000)
      f.backend.fail(0, transient)
    }
    let state = f.store.state(artist)
    #expect(state.following == false, "back to confirmed")
    #expect(state.confirmed == false)
    #expect(!state.pending)
    #expect(state.error == transient)
    #expect(f.backend.mutationCount == 5, "one call and three retries, after the first follow")
  }

  @Test func aPermanentFailureRollsBackAtOnceAndAwaitersGetTheError() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.backend.succeed()
    var outcome: Result<EntityState, FollowStore.SettleFailure>?
    f.store.setFollowing(artist, false) { outcome = $0 }
    #expect(outcome == nil)
    f.backend.fail(0, permanent)
    guard case .failure(let failure) = outcome else {
      Issue.record("expected a failure, got \(String(describing: outcome))")
      return
    }
    #expect(failure.failure == permanent)
    #expect(failure.state.following == true)
    #expect(f.store.state(artist).error == permanent)
  }

  @Test func aRollbackNeverShowsTheOppositeOfTheFailedCallWhenNothingWasConfirmed() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.backend.fail(0, permanent)
    let state = f.store.state(artist)
    #expect(state.following == nil, "unknown, not 'not following'")
    #expect(f.backend.waiting == [.fetch(artist)], "and the truth is asked for")
  }

  @Test func theReadAfterARollbackDoesNotHideTheRollbacksReason() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.backend.fail(0, permanent)
    #expect(f.backend.waiting == [.fetch(artist)])
    let versionAfterRollback = f.store.state(artist).version
    f.backend.fail(0, FollowFailure(.unavailable, "read failed"))
    #expect(f.store.state(artist).error == permanent, "why the follow was refused stays")
    #expect(f.store.state(artist).version == versionAfterRollback, "nothing changed, nothing notified")
    // A failed read still replaces an error that came from a read.
    f.store.read(artist, refresh: true, maxAgeMs: 0) { _ in }
    f.backend.fail(0, FollowFailure(.unavailable, "second read"))
    #expect(f.store.state(artist).error == permanent)
    f.backend.truth[artist] = false
    f.store.read(artist, refresh: true, maxAgeMs: 0) { _ in }
    f.backend.succeed()
    #expect(f.store.state(artist).error == nil && f.store.state(artist).confirmed == false)
  }

  @Test func aFailedReadReplacesAnErrorFromAnEarlierRead() throws {
    let f = try StoreFixture()
    f.store.read(artist, refresh: true, maxAgeMs: 0) { _ in }
    f.backend.fail(0, FollowFailure(.unavailable, "first"))
    f.store.read(artist, refresh: true, maxAgeMs: 0) { _ in }
    f.backend.fail(0, FollowFailure(.unavailable, "second"))
    #expect(f.store.state(artist).error?.message == "second")
  }

  @Test func aFailureThatArrivesAfterANewerIntentDoesNotClobberIt() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, false)
    f.backend.succeed()  // confirmed false
    f.store.setFollowing(artist, true)  // in flight
    f.store.setFollowing(artist, false)  // newer intent, equal to confirmed
    f.backend.fail(0, permanent)
    let state = f.store.state(artist)
    #expect(state.following == false && !state.pending)
    #expect(f.backend.waitingCount == 0, "nothing more to send: the backend already has it")

    f.store.setFollowing(artist, true)  // in flight
    f.store.setFollowing(artist, false)
    f.store.setFollowing(artist, true)  // newer intent equal to the failing one
    f.backend.fail(0, permanent)
    #expect(f.store.state(artist).following == false, "the intent that failed is rolled back")
  }

  @Test func aFetchDuringAMutationNeverOverwritesShownOrConfirmed() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, false)
    f.backend.succeed()
    var read: EntityState?
    f.store.read(artist, refresh: true, maxAgeMs: 0) { read = try? $0.get() }
    f.store.setFollowing(artist, true)
    // The read (started before the follow) answers "not following".
    f.backend.succeed(0)
    #expect(read?.following == true, "the optimistic state stays shown")
    #expect(f.store.state(artist).pending)
    f.backend.succeed(0)
    #expect(f.store.state(artist).confirmed == true)
  }

  @Test func aReadThatStartedBeforeTheLatestMutationDoesNotBecomeConfirmed() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.backend.succeed()  // confirmed true
    f.store.read(artist, refresh: true, maxAgeMs: 0) { _ in }
    f.store.setFollowing(artist, false)
    f.backend.succeed(1)  // unfollow confirmed first
    f.backend.truth[artist] = true  // the old read saw the old truth
    f.backend.succeed(0)
    #expect(f.store.state(artist).confirmed == false)
    #expect(f.store.state(artist).following == false)
  }

  @Test func concurrentReadsShareOneCallAndFreshStateComesFromMemory() throws {
    let f = try StoreFixture()
    var answers = 0
    for _ in 0..<100 { f.store.read(artist, maxAgeMs: 1000) { _ in answers += 1 } }
    #expect(f.backend.calls == [.fetch(artist)])
    f.backend.succeed()
    #expect(answers == 100)
    f.store.read(artist, maxAgeMs: 1000) { _ in answers += 1 }
    #expect(answers == 101)
    #expect(f.backend.calls.count == 1)
    f.clock.advance(by: .milliseconds(1001))
    f.store.read(artist, maxAgeMs: 1000) { _ in answers += 1 }
    #expect(f.backend.calls.count == 2, "older than maxAgeMs: asked again")
  }

  @Test func offlineModeKeepsAnExhaustedMutationQueuedUntilTheBackendAnswers() throws {
    let f = try StoreFixture(
      policy: RetryPolicy(maxRetries: 1, baseDelayMs: 100, maxDelayMs: 400, whenExhausted: .keepQueued))
    f.store.setFollowing(artist, true)
    for _ in 0..<10 {
      f.backend.fail(0, transient)
      try f.advance(ms: 500)
    }
    #expect(f.store.state(artist).pending)
    #expect(f.store.state(artist).following == true)
    f.backend.succeed()
    #expect(f.store.state(artist).confirmed == true)
    #expect(!f.store.state(artist).pending)
  }

  @Test func versionGrowsByOneOnEveryReportedChange() throws {
    let f = try StoreFixture()
    f.store.setFollowing(artist, true)
    f.store.setFollowing(artist, false)
    f.backend.succeed()
    f.backend.succeed()
    let versions = f.seen.map(\.version)
    #expect(versions == Array(1...UInt64(versions.count)))
  }
}
