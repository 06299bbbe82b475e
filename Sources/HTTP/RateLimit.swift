/// A token bucket: at most `perSecond` requests a second on average, after a burst of
/// as many; 0 is no limit. Time is the loop clock's nanoseconds.
struct RateLimit {
  var perSecond: Int {
    didSet { tokens = Double(perSecond) }
  }
  private var tokens: Double
  private var updatedAt: UInt64 = 0

  init(perSecond: Int) {
    self.perSecond = perSecond
    tokens = Double(perSecond)
  }

  /// Takes a token if one is there.
  mutating func take(now: UInt64) -> Bool {
    guard perSecond > 0 else { return true }
    refill(now: now)
    guard tokens >= 1 else { return false }
    tokens -= 1
    return true
  }

  /// Nanoseconds until the next token.
  mutating func delayUntilNext(now: UInt64) -> UInt64 {
    guard perSecond > 0 else { return 0 }
    refill(now: now)
    return tokens >= 1 ? 0 : UInt64((1 - tokens) * 1e9 / Double(perSecond)) + 1
  }

  private mutating func refill(now: UInt64) {
    let elapsed = Double(now &- updatedAt) / 1e9
    updatedAt = now
    tokens = min(Double(perSecond), tokens + elapsed * Double(perSecond))
  }
}
