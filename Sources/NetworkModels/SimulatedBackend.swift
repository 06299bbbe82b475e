import EventLoop
import Posix

/// What `--simulate latency=MS,jitter=MS,failure=RATE[,status=CODE][,seed=N]` asks for.
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

/// Why a `--simulate` value was refused; `description` names the bad part.
public struct SimulationSpecError: Error, Sendable, Equatable, CustomStringConvertible {
  public let message: String
  public var description: String { message }
}

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
    wrapping wrapped: ModelBackend, loop: EventLoop, latencyMs: UInt64, jitterMs: UInt64 = 0,
    failureRate: Double = 0, failureStatus: Int? = nil, seed: UInt64
  ) {
    self.wrapped = wrapped
    self.loop = loop
    self.settings = SimulationSettings(
      latencyMs: latencyMs, jitterMs: jitterMs, failureRate: min(max(failureRate, 0), 1),
      failureStatus: failureStatus, seed: seed)
    self.random = SplitMix64(seed: seed)
  }

  /// With the settings the command line parsed; `settings.seed` wins over `seed`.
  public convenience init(wrapping wrapped: ModelBackend, loop: EventLoop, settings: SimulationSettings, seed: UInt64) {
    self.init(
      wrapping: wrapped, loop: loop, latencyMs: settings.latencyMs, jitterMs: settings.jitterMs,
      failureRate: settings.failureRate, failureStatus: settings.failureStatus, seed: settings.seed ?? seed)
  }

  // MARK: ModelBackend

  public func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<Bool, FollowFailure>) -> Void
  ) {
    simulate("\(following ? "follow" : "unfollow") \(key)", completion: completion) { [wrapped] done in
      wrapped.setFollowing(key, following, completion: done)
    }
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<Bool, FollowFailure>) -> Void) {
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
    // SplitMix64 is the generator RetryPolicy.swift defines for the package.
    let fails = Double(random.next() >> 11) * 0x1p-53 < settings.failureRate
    let delay = nextDelayNanoseconds()
    if fails { injectedFailureCount += 1 }
    let failure = fails ? SimulatedBackend.failure(status: settings.failureStatus, what: what) : nil
    loop.schedule(afterNanoseconds: delay) {
      if let failure {
        completion(.failure(failure))
      } else {
        forward(completion)
      }
      return nil
    }
  }

  private func nextDelayNanoseconds() -> UInt64 {
    let latency = Int64(clamping: settings.latencyMs) * 1_000_000
    let jitter = Int64(clamping: settings.jitterMs) * 1_000_000
    // Always draw, so a seed gives the same failures whatever the jitter.
    let draw = random.next()
    guard jitter > 0 else { return UInt64(latency) }
    let offset = Int64(draw % UInt64(2 * jitter + 1)) - jitter
    return UInt64(max(0, latency + offset))
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

  // MARK: Parsing

  /// Parses `latency=MS,jitter=MS,failure=RATE,status=CODE,seed=N`: every key is
  /// optional, in any order, each at most once. Durations are whole milliseconds
  /// (an `ms` suffix is allowed); the rate is 0…1 or a percentage (`10%`); the status
  /// is an HTTP error status 400…599.
  public static func parse(spec: String) throws(SimulationSpecError) -> SimulationSettings {
    func fail(_ message: String) -> SimulationSpecError {
      SimulationSpecError(message: "--simulate \(spec): \(message)")
    }
    let trimmed = spec.trimmingSpaces
    if trimmed.isEmpty {
      throw fail("empty; expected for example latency=300,jitter=100,failure=0.2")
    }
    var settings = SimulationSettings()
    var seen: Set<String> = []
    for rawPart in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
      let part = Substring(rawPart.trimmingSpaces)
      guard !part.isEmpty else { throw fail("empty setting between commas") }
      guard let equals = part.firstIndex(of: "=") else {
        throw fail("\"\(part)\" is not KEY=VALUE (keys: latency, jitter, failure, status, seed)")
      }
      let key = part[..<equals].trimmingSpaces.lowercased()
      let value = part[part.index(after: equals)...].trimmingSpaces
      guard !value.isEmpty else { throw fail("\(key) has no value") }
      guard seen.insert(key).inserted else { throw fail("\(key) is given twice") }
      switch key {
      case "latency", "jitter":
        let digits = value.hasSuffix("ms") ? String(value.dropLast(2)) : value
        guard let ms = UInt64(digits), ms <= 3_600_000 else {
          throw fail("\(key)=\(value) is not a whole number of milliseconds from 0 to 3600000")
        }
        if key == "latency" { settings.latencyMs = ms } else { settings.jitterMs = ms }
      case "failure":
        let isPercent = value.hasSuffix("%")
        guard let number = Double(isPercent ? String(value.dropLast()) : value), number.isFinite else {
          throw fail("failure=\(value) is not a number (a rate from 0 to 1, or a percentage such as 10%)")
        }
        let rate = isPercent ? number / 100 : number
        guard (0...1).contains(rate) else {
          throw fail("failure=\(value) is out of range: the rate must be from 0 to 1 (or 0% to 100%)")
        }
        settings.failureRate = rate
      case "status":
        guard let status = Int(value), (400...599).contains(status) else {
          throw fail("status=\(value) is not an HTTP error status from 400 to 599")
        }
        settings.failureStatus = status
      case "seed":
        guard let seed = UInt64(value) else { throw fail("seed=\(value) is not a whole number ≥ 0") }
        settings.seed = seed
      default:
        throw fail("unknown setting \"\(key)\" (keys: latency, jitter, failure, status, seed)")
      }
    }
    return settings
  }
}

extension StringProtocol {
  fileprivate var trimmingSpaces: String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
      return ""
    }
    return String(self[first...last])
  }
}
