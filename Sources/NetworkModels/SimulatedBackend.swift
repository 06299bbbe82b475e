import EventLoop
import Posix

/// Wraps any backend with delays and failures, so a UI's pending and rollback paths
/// can be seen without breaking a server.
///
/// Each call waits latency ± uniform jitter (a timer on the loop), then either fails
/// — with probability `failureRate`, and then it never reaches the wrapped backend, so
/// a failed follow takes no effect — or is passed on. The random choices come from a
/// SplitMix64 generator: the same seed and the same calls give the same delays and
/// failures. All methods must be called on the loop's thread.
public final class SimulatedBackend: ModelBackend {
  public let wrapped: ModelBackend
  private let loop: EventLoop
  public let settings: SimulationSettings
  private var random: SplitMix64

  /// Calls made and failures injected so far.
  public private(set) var callCount = 0
  public private(set) var injectedFailureCount = 0

  public init(
    wrapping wrapped: ModelBackend, loop: EventLoop, latency: Duration, jitter: Duration = .zero,
    failureRate: Double = 0, failureStatus: Int? = nil, seed: UInt64
  ) {
    self.wrapped = wrapped
    self.loop = loop
    self.settings = SimulationSettings(
      latency: latency, jitter: jitter, failureRate: min(max(failureRate, 0), 1),
      failureStatus: failureStatus, seed: seed)
    self.random = SplitMix64(seed: seed)
  }

  /// With the settings the command line parsed; `settings.seed` wins over `seed`.
  public convenience init(wrapping wrapped: ModelBackend, loop: EventLoop, settings: SimulationSettings, seed: UInt64) {
    self.init(
      wrapping: wrapped, loop: loop, latency: settings.latency, jitter: settings.jitter,
      failureRate: settings.failureRate, failureStatus: settings.failureStatus, seed: settings.seed ?? seed)
  }

  // MARK: ModelBackend

  public func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    simulate("\(following ? "follow" : "unfollow") \(key)", completion: completion) { [wrapped] done in
      wrapped.setFollowing(key, following, completion: done)
    }
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    simulate("state of \(key)", completion: completion) { [wrapped] done in
      wrapped.fetchFollowing(key, completion: done)
    }
  }

  public func kindProblem(_ kind: String) -> String? { wrapped.kindProblem(kind) }

  /// The wrapped backend's, with its pages and details delayed and failed too. Calls
  /// the service makes itself (configure, checks, stats) are not simulated, nor are
  /// priorities: a simulated call waits in no HTTP queue.
  public var capabilities: BackendCapabilities {
    var capabilities = wrapped.capabilities
    capabilities.lists = capabilities.lists.map { SimulatedLists(simulation: self, wrapped: $0) }
    capabilities.details = capabilities.details.map { SimulatedDetails(simulation: self, wrapped: $0) }
    capabilities.prioritised = nil
    return capabilities
  }

  // MARK: Simulation

  /// Draws the outcome and the delay now (so they depend only on the order of calls),
  /// then after the delay either fails or passes the call on.
  func simulate<T>(
    _ what: String, completion: @escaping (Result<T, FollowFailure>) -> Void,
    forward: @escaping (@escaping (Result<T, FollowFailure>) -> Void) -> Void
  ) {
    callCount += 1
    let fails = Double(random.next() >> 11) * 0x1p-53 < settings.failureRate
    let delay = nextDelay()
    if fails { injectedFailureCount += 1 }
    let failure = fails ? SimulatedBackend.failure(status: settings.failureStatus, what: what) : nil
    loop.schedule(after: delay) {
      if let failure {
        completion(.failure(failure))
      } else {
        forward(completion)
      }
    }
  }

  private func nextDelay() -> Duration {
    let latency = Int64(clamping: settings.latency.clampedNanoseconds)
    let jitter = Int64(clamping: settings.jitter.clampedNanoseconds)
    // Always draw, so a seed gives the same failures whatever the jitter.
    let draw = random.next()
    guard jitter > 0 else { return .nanoseconds(latency) }
    let offset = Int64(draw % UInt64(2 * jitter + 1)) - jitter
    return .nanoseconds(max(0, latency + offset))
  }

  /// The failure a simulated call returns: no status, 5xx and 429 are transient,
  /// 401 and 403 unauthorized, other 4xx rejected.
  static func failure(status: Int?, what: String) -> FollowFailure {
    guard let status else { return FollowFailure(.unavailable, "simulated network failure (\(what))") }
    let message = "simulated HTTP \(status) (\(what))"
    switch status {
    case 401, 403: return FollowFailure(.unauthorized(status: status), message)
    case 429, 500...599: return FollowFailure(.unavailable, message)
    case 400...499: return FollowFailure(.rejected(status: status), message)
    default: return FollowFailure(.unavailable, message)
    }
  }
}
