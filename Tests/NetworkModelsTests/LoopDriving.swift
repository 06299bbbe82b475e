import EventLoop
import NetworkModels
import Posix
import Testing

/// A fixture on a real loop (a loopback HTTP server on it): runs the loop until what
/// a test waits for happened, or 10 s passed.
protocol LoopDriving {
  var loop: EventLoop { get }
}

extension LoopDriving {
  func run(until done: () -> Bool) throws {
    let deadline = Process.monotonicNanoseconds() + 10_000_000_000
    while !done() && Process.monotonicNanoseconds() < deadline { try loop.runOnce(wait: true) }
  }
}

/// A fixture with a follow store on that loop: a follow or a read, waited for.
protocol StoreDriving: LoopDriving {
  var store: FollowStore { get }
}

extension StoreDriving {
  /// Follows or unfollows and waits until the backend settled.
  func set(_ key: EntityKey, _ following: Bool) throws -> Result<EntityState, FollowStore.SettleFailure> {
    var result: Result<EntityState, FollowStore.SettleFailure>?
    store.setFollowing(key, following) { result = $0 }
    try run { result != nil }
    return try #require(result)
  }

  func read(_ key: EntityKey) throws -> Result<EntityState, FollowStore.SettleFailure> {
    var result: Result<EntityState, FollowStore.SettleFailure>?
    store.read(key, refresh: true, maxAgeMs: 0) { result = $0 }
    try run { result != nil }
    return try #require(result)
  }
}
