import EventLoop
import NetworkModels
import Testing

/// An intent log that outlives the stores that write to it, as the outbox file
/// outlives a killed process.
final class MemoryIntentLog: IntentLog {
  private var intents: [EntityKey: Bool] = [:]
  private var order: [EntityKey] = []

  func record(_ key: EntityKey, wanted: Bool?) {
    intents[key] = wanted
    order.removeAll { $0 == key }
    if wanted != nil { order.append(key) }
  }

  func unsettledIntents() -> [(EntityKey, Bool)] { order.compactMap { key in intents[key].map { (key, $0) } } }
  var count: Int { order.count }
}

@Suite struct FollowStorePropertyTests {
  /// Random toggles, answers (success, transient, unauthorized, permanent), token
  /// changes, reads, time and crashes; then the backend recovers. Whatever happened: versions grow by one per notification, the
  /// subscriber's last state is the store's, and the confirmed state is the last
  /// intent unless a permanent failure rolled that intent back.
  @Test(arguments: 0..<300)
  func randomHistoriesKeepTheInvariants(seed: Int) throws {
    var random = SplitMix64(seed: UInt64(seed) &* 7919 &+ 1)
    let log = MemoryIntentLog()
    let policy = RetryPolicy(maxRetries: 2, baseDelayMs: 50, maxDelayMs: 200)
    var f = try StoreFixture(policy: policy, intentLog: log)
    var restarts = 0
    let keys = [artist, EntityKey(kind: "gene", id: "pop-art")]
    var lastIntent: [EntityKey: Bool] = [:]
    var rolledBackAfterIntent: [EntityKey: Bool] = [:]
    var newestVersion: UInt64 = 0
    func watch(_ fixture: StoreFixture) {
      newestVersion = 0
      fixture.store.onChange = { [unowned fixture] state in
        // Every change of the run takes the next version, whichever entity it is of.
        #expect(state.version == newestVersion + 1, "seed \(seed)")
        newestVersion = state.version
        fixture.seen.append(state)
        // A rollback (permanent failure or retries exhausted) drops the intent.
        // An unauthorized answer never excuses a lost intent.
        if !state.pending, let error = state.error, !error.isUnauthorized, let intent = lastIntent[state.key],
          state.following != intent
        {
          rolledBackAfterIntent[state.key] = true
        }
      }
    }
    watch(f)

    for _ in 0..<60 {
      let key = keys[Int(random.next() % 2)]
      switch random.next() % 6 {
      case 0, 1:
        let wanted = random.next() % 2 == 0
        let before = f.store.state(key)
        f.store.setFollowing(key, wanted)
        if before.pending ? before.following != wanted : true {
          lastIntent[key] = wanted
          rolledBackAfterIntent[key] = false
        }
      case 2:
        if f.backend.waitingCount > 0 { f.backend.succeed(Int(random.next() % UInt64(f.backend.waitingCount))) }
      case 3:
        // Transient, or unauthorized: neither may lose the intent.
        let failure = random.next() % 2 == 0 ? transient : unauthorized
        if f.backend.waitingCount > 0 { f.backend.fail(0, failure) }
      case 4:
        if f.backend.waitingCount > 0, case .set(let failedKey, let value) = f.backend.waiting[0] {
          let intentBefore = lastIntent[failedKey]
          f.backend.fail(0, permanent)
          if intentBefore == value && !f.store.state(failedKey).pending { rolledBackAfterIntent[failedKey] = true }
        }
      case 5 where random.next() % 8 == 0:
        // A crash: calls in flight may or may not have reached the backend; the
        // intent log survives, and the next process replays it.
        let survivor = try StoreFixture(policy: policy, intentLog: log)
        survivor.backend.truth = f.backend.truth
        for call in f.backend.waiting {
          if case .set(let key, let value) = call, random.next() % 2 == 0 { survivor.backend.truth[key] = value }
        }
        f = survivor
        watch(f)
        f.store.replayIntents()
        restarts += 1
      default:
        if random.next() % 4 == 0 {
          // The host signs in again (configure {authToken}).
          f.store.credentialsChanged()
        } else if random.next() % 2 == 0 {
          f.store.read(key, refresh: true, maxAgeMs: 0) { _ in }
        } else {
          try f.advance(ms: 100)
        }
      }
    }
    // The backend recovers: everything succeeds until nothing is pending.
    for _ in 0..<200 where f.backend.waitingCount > 0 || keys.contains(where: { f.store.state($0).pending }) {
      f.store.credentialsChanged()
      while f.backend.waitingCount > 0 { f.backend.succeed() }
      try f.advance(ms: 300)
    }

    // A process that started after a crash may not know an entity yet: ask.
    for key in keys where f.store.state(key).confirmed == nil {
      f.store.read(key, refresh: true, maxAgeMs: 0) { _ in }
      while f.backend.waitingCount > 0 { f.backend.succeed() }
    }
    for key in keys {
      let state = f.store.state(key)
      #expect(!state.pending, "seed \(seed)")
      if let seen = f.seen.last(where: { $0.key == key }) {
        #expect(seen == state, "seed \(seed): the subscriber's last state is the store's")
      }
      if let intent = lastIntent[key], rolledBackAfterIntent[key] != true {
        #expect(state.confirmed == intent, "seed \(seed): confirmed is the last intent")
        #expect(state.following == intent, "seed \(seed)")
        #expect((f.backend.truth[key] ?? false) == intent, "seed \(seed): the backend has it")
      }
    }
  }
}

extension FollowFailure {
  var isUnauthorized: Bool {
    if case .unauthorized = kind { return true }
    return false
  }
}
