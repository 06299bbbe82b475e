import EventLoop
import NetworkModels
import Testing

/// `--max-held-bytes`: the estimate kept at insert and remove, and what goes when it is
/// over the bound (least recently used first, never what something holds).
@Suite struct HeldBytesTests {
  static func detail(_ size: Int) -> String { "{\"a\":\"" + String(repeating: "x", count: size - 8) + "\"}" }

  @Test func detailsAreCountedAsTheyComeAndGo() throws {
    let f = try StoreFixture()
    f.store.eviction = EvictionPolicy(maxCount: 100, idle: .milliseconds(100))
    let other = EntityKey(kind: "artist", id: "other")
    f.store.observe(artist, following: true)
    f.store.observe(other, following: true)
    f.store.setAttributes(artist, Self.detail(100))
    f.store.setAttributes(other, Self.detail(50))
    #expect(f.store.heldBytes.entities == 150)
    f.store.setAttributes(artist, Self.detail(30))
    #expect(f.store.heldBytes.entities == 80)
    try f.advance(ms: 300)
    #expect(f.store.entityCount == 0)
    #expect(f.store.heldBytes.entities == 0)
  }

  @Test func overTheBoundTheLeastRecentlyUsedGoAndHeldOrPendingStay() throws {
    let f = try StoreFixture()
    // No idle time: uses are ordered by ticks of 15 s, and only the bounds evict.
    f.store.eviction = EvictionPolicy(maxCount: 1000, idle: .zero)
    f.store.heldBytes.limit = 1000
    let held = EntityKey(kind: "artist", id: "held")
    f.store.isHeld = { $0 == held }
    f.store.setFollowing(artist, true)  // no answer: pending
    f.store.setAttributes(artist, Self.detail(200))
    f.store.observe(held, following: true)
    f.store.setAttributes(held, Self.detail(200))
    let keys = (0..<6).map { EntityKey(kind: "artist", id: "a\($0)") }
    for key in keys {
      try f.advance(ms: 15_100)
      f.store.observe(key, following: true)
      f.store.setAttributes(key, Self.detail(100))
    }
    try f.advance(ms: 10)
    // 400 held and pending, 600 others: at the bound, nothing goes yet.
    #expect(f.store.counters.evicted == 0)
    _ = f.store.state(keys[0])  // now the most recently used
    try f.advance(ms: 15_100)
    f.store.observe(EntityKey(kind: "artist", id: "new"), following: true)
    f.store.setAttributes(EntityKey(kind: "artist", id: "new"), Self.detail(250))
    try f.advance(ms: 10)
    // 1250 over 1000: down to 875 at most, oldest first: a1, a2, a3, a4.
    #expect(f.store.heldBytes.total <= 875)
    #expect(f.store.state(artist).pending && f.store.state(artist).attributes != nil)
    #expect(f.store.state(held).attributes != nil)
    #expect(f.store.isKnown(keys[0]) && f.store.isKnown(keys[5]))
    #expect(keys[1...4].allSatisfy { !f.store.isKnown($0) })
  }

  @Test func whatWasHeldGoesOnTheNextTickOnceNothingHoldsIt() throws {
    let f = try StoreFixture()
    f.store.eviction = EvictionPolicy(maxCount: 1000, idle: .zero)
    f.store.heldBytes.limit = 1000
    var held = true
    f.store.isHeld = { _ in held }
    let keys = (0..<3).map { EntityKey(kind: "artist", id: "a\($0)") }
    for key in keys {
      f.store.observe(key, following: true)
      f.store.setAttributes(key, Self.detail(500))
    }
    try f.advance(ms: 10)
    #expect(f.store.heldBytes.entities == 1500)
    held = false
    try f.advance(ms: 15_100)
    #expect(f.store.heldBytes.entities <= 875)
  }

  @Test func aPageLargerThanTheBoundFailsWithAMessage() throws {
    let f = try ListFixture()
    f.store.heldBytes.limit = 500
    let first = f.fetch(.first)
    f.backend.answer(start: 0)  // ten items of ~100 bytes
    #expect(first()?.phase == .failure)
    let message = first()?.error?.message ?? ""
    #expect(message.contains("--max-held-bytes (500)") && message.contains("10 items"))
    #expect(first()?.items.isEmpty == true)
    #expect(f.lists.counters.overBoundPages == 1)
    #expect(f.store.heldBytes.lists == 0)
  }

  @Test func listsOverTheBoundGoLeastRecentlyUsedFirstButNotSubscribedOnes() throws {
    let f = try ListFixture()
    f.store.heldBytes.limit = 2500
    f.lists.eviction = EvictionPolicy(maxCount: 256, idle: .zero)
    let clock = try #require(f.loop.clock as? ManualClock)
    let keys = (0..<3).map { ListKey(name: "artists", paramsText: "{\"n\":\"\($0)\"}") }
    var subscribed: Set<ListKey> = [keys[0]]
    f.lists.hasSubscribers = { subscribed.contains($0) }
    for key in keys {
      clock.advance(by: .milliseconds(15_100))
      f.lists.fetch(key, page: .first) { _ in }
      f.backend.answer(start: 0)
      try f.loop.runOnce(wait: false)
    }
    // Each list ~1000 bytes: the third is over the bound; the first is subscribed, so
    // the second goes.
    #expect(f.lists.listCount == 2)
    #expect(f.lists.snapshot(keys[0])?.phase == .loaded)
    #expect(f.lists.snapshot(keys[1])?.phase == .idle)
    #expect(f.lists.snapshot(keys[2])?.phase == .loaded)
    #expect(f.store.heldBytes.lists <= 2500)
    subscribed = []
  }
}
