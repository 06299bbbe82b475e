import EventLoop
import NetworkModels
import Testing

@Suite struct EvictionTests {
  @Test func anEvictedEntityComesBackAboveEveryVersionItHad() throws {
    let f = try StoreFixture()
    f.store.eviction = EvictionPolicy(maxCount: 100, idle: .milliseconds(100))
    f.store.observe(artist, following: true)
    f.store.setAttributes(artist, #"{"name":"Banksy"}"#)
    let before = f.store.state(artist)
    try f.advance(ms: 300)
    #expect(f.store.entityCount == 0)
    let after = f.store.state(artist)
    #expect(after.confirmed == nil && after.attributes == nil)
    #expect(after.version > before.version)
  }

  @Test func heldAndPendingEntitiesStay() throws {
    let f = try StoreFixture()
    f.store.eviction = EvictionPolicy(maxCount: 1, idle: .milliseconds(100))
    let held = EntityKey(kind: "artist", id: "held")
    f.store.isHeld = { $0 == held }
    f.store.observe(held, following: false)
    f.store.setFollowing(artist, true)  // no answer: pending
    for n in 0..<10 { f.store.observe(EntityKey(kind: "artist", id: "a\(n)"), following: true) }
    try f.advance(ms: 300)
    #expect(f.store.entityCount == 2)
    #expect(f.store.state(artist).pending)
    #expect(f.store.isKnown(held))
    #expect(f.store.counters.evicted == 10)
  }

  @Test func beyondTheCapTheLeastRecentlyUsedGoFirst() throws {
    let f = try StoreFixture()
    f.store.eviction = EvictionPolicy(maxCount: 8, idle: .seconds(40))
    let keys = (0..<8).map { EntityKey(kind: "artist", id: "a\($0)") }
    for key in keys { f.store.observe(key, following: true) }
    try f.advance(ms: 10_100)
    for key in keys[..<4] { _ = f.store.state(key) }
    f.store.observe(EntityKey(kind: "artist", id: "new"), following: true)
    try f.advance(ms: 10)
    #expect(f.store.entityCount == 7)
    #expect(keys[..<4].allSatisfy { f.store.isKnown($0) })
    #expect(f.store.isKnown(EntityKey(kind: "artist", id: "new")))
  }
}
