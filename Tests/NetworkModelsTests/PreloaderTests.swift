import EventLoop
import NetworkModels
import Testing

/// Answers every call after `latencyMs` of the manual clock; kinds named in
/// `detailKinds` have a detail endpoint. Records each call with the preloader's level
/// of the item at the moment the call went out.
final class TimedBackend: ModelBackend, DetailSource {
  let loop: EventLoop
  var latencyMs: UInt64 = 30
  var detailKinds: Set<String> = []
  var followed: Set<EntityKey> = []
  var reads: [EntityKey] = []
  var details: [EntityKey] = []
  var levelAtCall: ((EntityKey) -> Preloader.Level)?
  var callsWhileOutOfRange: [EntityKey] = []

  init(loop: EventLoop) { self.loop = loop }

  func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    loop.schedule(after: .milliseconds(latencyMs)) { completion(.success(FollowAnswer(following))) }
  }
  func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    reads.append(key)
    if levelAtCall?(key) == Preloader.Level.none { callsWhileOutOfRange.append(key) }
    let answer = followed.contains(key)
    loop.schedule(after: .milliseconds(latencyMs)) { completion(.success(FollowAnswer(answer))) }
  }
  var capabilities: BackendCapabilities { BackendCapabilities(details: self) }
  func hasDetail(kind: String) -> Bool { detailKinds.contains(kind) }
  func fetchDetail(_ key: EntityKey, completion: @escaping (Result<String, FollowFailure>) -> Void) {
    details.append(key)
    loop.schedule(after: .milliseconds(latencyMs)) { completion(.success(#"{"name":"\#(key.id)"}"#)) }
  }
}

final class PreloadFixture {
  let clock = ManualClock()
  let loop: EventLoop
  let backend: TimedBackend
  let store: FollowStore
  let preloader: Preloader

  init(maxInFlight: Int = 4) throws {
    loop = try EventLoop(clock: clock)
    backend = TimedBackend(loop: loop)
    store = FollowStore(loop: loop, backend: backend)
    preloader = Preloader(store: store, maxInFlight: maxInFlight)
    backend.levelAtCall = { [unowned self] key in self.preloader.level(of: key) }
  }

  func advance(ms: UInt64) throws {
    for _ in 0..<ms {
      clock.advance(by: .milliseconds(1))
      try loop.runOnce(wait: false)
    }
  }

  static func items(_ range: Range<Int>) -> [EntityKey] { range.map { EntityKey(kind: "artist", id: "a\($0)") } }
}

@Suite struct PreloaderTests {
  @Test func visibleGoesFirstThenDisplayThenPreload() throws {
    let f = try PreloadFixture(maxInFlight: 2)
    f.preloader.set(PreloadFixture.items(0..<4), to: .preload, host: 1)
    f.preloader.set(PreloadFixture.items(10..<14), to: .display, host: 1)
    f.preloader.set(PreloadFixture.items(20..<24), to: .visible, host: 1)
    try f.advance(ms: 400)
    let order = f.backend.reads.map(\.id)
    // The first two went out before the others were known; after them, by level.
    #expect(order.count == 12)
    #expect(Array(order[2...]) == ["a20", "a21", "a22", "a23", "a10", "a11", "a12", "a13", "a2", "a3"])
  }

  @Test func anItemThatLeavesBeforeItsTurnIsNeverFetched() throws {
    let f = try PreloadFixture(maxInFlight: 1)
    f.preloader.set(PreloadFixture.items(0..<5), to: .preload, host: 1)
    f.preloader.set(PreloadFixture.items(2..<5), to: .none, host: 1)
    try f.advance(ms: 300)
    #expect(f.backend.reads.map(\.id) == ["a0", "a1"])
    #expect(f.preloader.counters.cancelled == 3)
  }

  @Test func workInFlightFinishesAndIsKept() throws {
    let f = try PreloadFixture()
    let key = PreloadFixture.items(0..<1)
    f.backend.followed = [key[0]]
    f.preloader.set(key, to: .visible, host: 1)
    try f.advance(ms: 1)
    f.preloader.set(key, to: .none, host: 1)
    try f.advance(ms: 100)
    #expect(f.store.state(key[0]).confirmed == true)
    f.preloader.set(key, to: .visible, host: 1)
    try f.advance(ms: 100)
    #expect(f.backend.reads.count == 1, "loaded once, then answered from the store")
  }

  @Test func theUnionOfHostsCounts() throws {
    let f = try PreloadFixture(maxInFlight: 1)
    f.preloader.set(PreloadFixture.items(0..<3), to: .preload, host: 1)
    f.preloader.set(PreloadFixture.items(0..<3), to: .display, host: 2)
    f.preloader.set(PreloadFixture.items(0..<3), to: .none, host: 2)
    #expect(f.preloader.level(of: PreloadFixture.items(2..<3)[0]) == .preload, "host 1 still shows them")
    f.preloader.hostGone(1)
    try f.advance(ms: 300)
    #expect(f.backend.reads.map(\.id) == ["a0"], "only the one already started")
  }

  @Test func detailsAreLoadedWhereTheKindHasThem() throws {
    let f = try PreloadFixture()
    f.backend.detailKinds = ["artist"]
    f.preloader.set(PreloadFixture.items(0..<3), to: .visible, host: 1)
    try f.advance(ms: 100)
    #expect(f.backend.details.count == 3)
    #expect(f.store.state(PreloadFixture.items(1..<2)[0]).attributes == #"{"name":"a1"}"#)
  }

  @Test func getEntityLoadsTheDetailOnceForConcurrentCallers() throws {
    let f = try PreloadFixture()
    f.backend.detailKinds = ["artist"]
    let key = EntityKey(kind: "artist", id: "banksy")
    var answers: [EntityState] = []
    for _ in 0..<10 {
      f.preloader.entity(key, refresh: false) { if case .success(let state) = $0 { answers.append(state) } }
    }
    try f.advance(ms: 100)
    #expect(answers.count == 10 && answers.allSatisfy { $0.attributes == #"{"name":"banksy"}"# })
    #expect(f.backend.details.count == 1 && f.backend.reads.count == 1)
    #expect(f.preloader.counters.detailShared == 9)
  }

  /// The issue's scroll: 1,000 items, 20 visible and 40 in preload ahead, the window
  /// moving 5 items per 16 ms frame while the backend takes 30 ms a call.
  @Test func scrollingFetchesEachItemAtMostOnceAndNeverOneThatLeft() throws {
    let f = try PreloadFixture(maxInFlight: 8)
    var shown: [EntityKey: Preloader.Level] = [:]
    for top in stride(from: 0, through: 940, by: 5) {
      var wanted: [EntityKey: Preloader.Level] = [:]
      for key in PreloadFixture.items(top..<min(top + 20, 1000)) { wanted[key] = .visible }
      for key in PreloadFixture.items(min(top + 20, 1000)..<min(top + 60, 1000)) { wanted[key] = .preload }
      for (key, _) in shown where wanted[key] == nil { f.preloader.set([key], to: .none, host: 1) }
      for (key, level) in wanted where shown[key] != level { f.preloader.set([key], to: level, host: 1) }
      shown = wanted
      try f.advance(ms: 16)
    }
    try f.advance(ms: 500)
    let reads = f.backend.reads
    #expect(Set(reads).count == reads.count, "no item fetched twice")
    #expect(f.backend.callsWhileOutOfRange.isEmpty, "no item fetched after it left the range")
    #expect(f.preloader.counters.cancelled > 0, "the window moves faster than the backend")
    #expect(reads.count < 1000 && reads.count > 100)
  }
}
