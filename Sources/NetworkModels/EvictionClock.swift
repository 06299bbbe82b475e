import EventLoop

/// The coarse time of last use that eviction needs: a tick is a quarter of the idle
/// time (15 s without one), kept in a cached counter so that marking a use costs no
/// clock read; least recently used means to a tick. An item
/// last used in tick `t` is idle once the tick is `t + 5`: unused for at least the idle
/// time, and for at most a quarter more (more when sweeps are slow: see `schedule`).
final class EvictionClock {
  let loop: EventLoop
  var policy: EvictionPolicy
  /// The current tick; items store it when used.
  private(set) var tick: UInt32 = 0
  private var timer: EventLoop.TimerID?
  private var start: LoopInstant
  private let sweep: () -> Bool

  static let idleTicks: UInt32 = 5

  /// `sweep` runs every tick while it returns true (something is left to age).
  init(loop: EventLoop, policy: EvictionPolicy, sweep: @escaping () -> Bool) {
    self.loop = loop
    self.policy = policy
    self.sweep = sweep
    start = loop.clock.now
  }

  deinit {
    if let timer { loop.cancel(timer) }
  }

  /// In whole milliseconds; without an idle time, ticks still order uses for the
  /// count's LRU.
  private var tickNanoseconds: UInt64 {
    (policy.idle > .zero ? max(1, policy.idle.clampedNanoseconds / 4_000_000) : 15_000) * 1_000_000
  }

  /// Items last used at or before this tick are idle; nil while none can be.
  var idleBefore: UInt32? {
    guard policy.idle > .zero, tick >= EvictionClock.idleTicks else { return nil }
    return tick - EvictionClock.idleTicks
  }

  /// Something was added: make sure it ages.
  func itemAdded() {
    guard timer == nil else { return }
    // The tick stood still while nothing aged: catch up before the new item takes it.
    advance()
    schedule()
  }

  private func advance() {
    // Whole ticks: `Duration` divides only into a `Double`.
    tick = UInt32(truncatingIfNeeded: (loop.clock.now.nanoseconds &- start.nanoseconds) / tickNanoseconds)
  }

  private func schedule(after sweepTime: Duration = .zero) {
    let now = loop.clock.now
    // A sweep looks at every item: when that is slow (many items, all held), the next
    // waits long enough that sweeping never takes more than a fifth of the loop.
    let next = max(start + .nanoseconds((UInt64(tick) + 1) * tickNanoseconds), now + sweepTime * 4)
    timer = loop.schedule(after: next - now) { [weak self] in
      guard let self else { return }
      self.timer = nil
      self.advance()
      let began = self.loop.clock.now
      if self.sweep() { self.schedule(after: self.loop.clock.now - began) }
    }
  }
}
