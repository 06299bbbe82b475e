/// When to try a failed backend call again: exponential backoff with jitter, so many
/// clients recovering at once do not retry in step.
public struct RetryPolicy: Sendable {
  public enum WhenExhausted: Sendable {
    /// Roll `following` back to `confirmed` and report the error (the default).
    case rollBack
    /// Offline mode: stay pending and keep trying at the longest delay.
    case keepQueued
  }

  public enum WhenUnauthorized: Sendable {
    /// A 401/403 judges the credentials, not the intent: keep it pending and durable,
    /// and send it again when credentials change (the default).
    case waitForCredentials
    /// Roll back as for any other refusal (opt-in, `retry.onUnauthorized: "rollback"`).
    case rollBack
  }

  public var maxRetries: Int
  public var baseDelayMs: UInt64
  public var maxDelayMs: UInt64
  /// The longest wait an answer may ask for (Retry-After, a rate limit's reset) that
  /// a mutation spends waiting; beyond it the mutation fails at once, saying how long
  /// is left, rather than hold its caller. One hour by default (as long as Retry-After
  /// was ever believed).
  public var maxWaitMs: UInt64 = 3_600_000
  public var whenExhausted: WhenExhausted
  public var whenUnauthorized: WhenUnauthorized

  public init(
    maxRetries: Int = 4, baseDelayMs: UInt64 = 250, maxDelayMs: UInt64 = 30_000,
    whenExhausted: WhenExhausted = .rollBack, whenUnauthorized: WhenUnauthorized = .waitForCredentials
  ) {
    self.maxRetries = maxRetries
    self.baseDelayMs = baseDelayMs
    self.maxDelayMs = maxDelayMs
    self.whenExhausted = whenExhausted
    self.whenUnauthorized = whenUnauthorized
  }

  /// The delay before retry number `attempt` (1-based): base·2^(attempt−1), capped,
  /// then "equal jitter" (half fixed, half random), and never less than what the
  /// backend asked for with Retry-After.
  public func delay(attempt: Int, retryAfter: Duration?, random: inout SplitMix64) -> Duration {
    let exponent = UInt64(min(max(attempt - 1, 0), 20))
    let capped = min(maxDelayMs, baseDelayMs << exponent)
    let half = capped / 2
    let jittered = half + (half == 0 ? 0 : random.next() % (half + 1))
    return max(.milliseconds(jittered), retryAfter ?? .zero)
  }
}
