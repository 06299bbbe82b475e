/// How a `SimulatedBackend` delays and fails calls (`serve --simulate`, parsed by the
/// executable).
public struct SimulationSettings: Sendable, Equatable {
  /// Delay of every call.
  public var latency: Duration
  /// Each delay is latency ± a uniform amount up to this (never below zero), drawn in
  /// whole nanoseconds.
  public var jitter: Duration
  /// Probability (0…1) that a call fails.
  public var failureRate: Double
  /// The HTTP status a failure stands for; nil for a network failure.
  public var failureStatus: Int?
  /// Seed of the random choices; nil lets the caller choose one.
  public var seed: UInt64?

  public init(
    latency: Duration = .zero, jitter: Duration = .zero, failureRate: Double = 0, failureStatus: Int? = nil,
    seed: UInt64? = nil
  ) {
    self.latency = latency
    self.jitter = jitter
    self.failureRate = failureRate
    self.failureStatus = failureStatus
    self.seed = seed
  }
}
