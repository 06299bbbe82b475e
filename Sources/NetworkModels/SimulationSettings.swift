/// How a `SimulatedBackend` delays and fails calls (`serve --simulate`, parsed by the
/// executable).
public struct SimulationSettings: Sendable, Equatable {
  /// Delay of every call, in milliseconds.
  public var latencyMs: UInt64
  /// Each delay is latency ± a uniform amount up to this, in milliseconds (never
  /// below zero).
  public var jitterMs: UInt64
  /// Probability (0…1) that a call fails.
  public var failureRate: Double
  /// The HTTP status a failure stands for; nil for a network failure.
  public var failureStatus: Int?
  /// Seed of the random choices; nil lets the caller choose one.
  public var seed: UInt64?

  public init(
    latencyMs: UInt64 = 0, jitterMs: UInt64 = 0, failureRate: Double = 0, failureStatus: Int? = nil,
    seed: UInt64? = nil
  ) {
    self.latencyMs = latencyMs
    self.jitterMs = jitterMs
    self.failureRate = failureRate
    self.failureStatus = failureStatus
    self.seed = seed
  }
}
