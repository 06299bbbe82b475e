import EventLoop

/// A token bucket: at most `perSecond` requests a second on average, after a burst of
/// as many; 0 is no limit.
struct RateLimit {
  var perSecond: Int {
    didSet { tokens = Double(perSecond) }
  }
  private var tokens: Double
  private var updatedAt = LoopInstant(nanoseconds: 0)

  init(perSecond: Int) {
    self.perSecond = perSecond
    tokens = Double(perSecond)
  }

  /// Takes a token if one is there.
  mutating func take(now: LoopInstant) -> Bool {
    guard perSecond > 0 else { return true }
    refill(now: now)
    guard tokens >= 1 else { return false }
    tokens -= 1
    return true
  }

  /// The time until the next token.
  mutating func delayUntilNext(now: LoopInstant) -> Duration {
    guard perSecond > 0 else { return .zero }
    refill(now: now)
    return tokens >= 1 ? .zero : .nanoseconds(UInt64((1 - tokens) * 1e9 / Double(perSecond)) + 1)
  }

  private mutating func refill(now: LoopInstant) {
    let elapsed = (now - updatedAt) / .seconds(1)
    updatedAt = now
    tokens = min(Double(perSecond), tokens + elapsed * Double(perSecond))
  }
}
