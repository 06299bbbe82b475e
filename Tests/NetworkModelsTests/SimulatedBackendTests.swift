import EventLoop
import NetworkModels
import Posix
import Testing

/// Counts the calls that reach it and answers on the next loop iteration.
private final class SimulationProbeBackend: ModelBackend {
  let loop: EventLoop
  let clock: ManualClock
  var calls: [String] = []
  /// Clock time (ns) at which each call arrived.
  var arrivals: [LoopInstant] = []
  var follows: Set<EntityKey> = []

  init(loop: EventLoop, clock: ManualClock) {
    self.loop = loop
    self.clock = clock
  }

  func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    note("set \(key) \(following)")
    if following { follows.insert(key) } else { follows.remove(key) }
    loop.execute { completion(.success(FollowAnswer(following))) }
  }

  func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    note("fetch \(key)")
    let answer = follows.contains(key)
    loop.execute { completion(.success(FollowAnswer(answer))) }
  }

  private func note(_ call: String) {
    calls.append(call)
    arrivals.append(clock.now)
  }
}

private let banksy = EntityKey(kind: "artist", id: "banksy")

@Suite struct SimulatedBackendTests {
  @Test func aCallCompletesOnlyAfterTheLatency() throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    let probe = SimulationProbeBackend(loop: loop, clock: clock)
    let backend = SimulatedBackend(wrapping: probe, loop: loop, latency: .milliseconds(100), seed: 1)
    var result: Result<FollowAnswer, FollowFailure>?
    backend.setFollowing(banksy, true) { result = $0 }
    #expect(result == nil)
    try loop.runOnce(wait: false)
    clock.advance(by: .milliseconds(99))
    try loop.runOnce(wait: false)
    try loop.runOnce(wait: false)
    #expect(result == nil)
    #expect(probe.calls.isEmpty)
    clock.advance(by: .milliseconds(1))
    try loop.runOnce(wait: false)
    #expect(probe.calls == ["set artist/banksy true"])
    try loop.runOnce(wait: false)
    #expect(result == .success(true))
  }

  @Test func theLatencyAlsoDelaysTheLocalBackend() throws {
    let temp = try LocalBackendTestFolder()
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    let local = try LocalBackend(loop: loop, folder: temp.folder)
    let backend = SimulatedBackend(wrapping: local, loop: loop, latency: .milliseconds(50), seed: 1)
    var followed: [EntityKey]?
    backend.setFollowing(banksy, true) { _ in }
    backend.capabilities.lists?.fetchListPage(ListPageRequest(key: ListKey(name: "following/artist"))) {
      followed = try? $0.get().items.map(\.key)
    }
    for _ in 0..<3 { try loop.runOnce(wait: false) }
    #expect(!local.isFollowing(banksy))
    clock.advance(by: .milliseconds(50))
    for _ in 0..<3 { try loop.runOnce(wait: false) }
    #expect(local.isFollowing(banksy))
    #expect(followed == [banksy])
  }

  @Test func theWrappedBackendsCapabilitiesStayExceptItsPriorities() throws {
    let loop = try EventLoop(clock: ManualClock())
    let rest = RESTBackend(configuration: try RESTConfiguration.parse(RESTPlaceholderTests.configuration), loop: loop)
    let capabilities = SimulatedBackend(wrapping: rest, loop: loop, latency: .milliseconds(1), seed: 1).capabilities
    #expect(capabilities.environments === rest.session && capabilities.placeholders === rest.follows)
    #expect(capabilities.attributes === rest.follows && capabilities.statistics === rest.statistics)
    #expect(capabilities.lists?.listDescription("pair") != nil && capabilities.details != nil)
    #expect(capabilities.prioritised == nil, "a simulated call waits in no HTTP queue")
  }

  @Test func aZeroLatencyCallStillCompletesLater() throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    let probe = SimulationProbeBackend(loop: loop, clock: clock)
    let backend = SimulatedBackend(wrapping: probe, loop: loop, latency: .milliseconds(0), failureRate: 1, seed: 1)
    var result: Result<FollowAnswer, FollowFailure>?
    backend.fetchFollowing(banksy) { result = $0 }
    #expect(result == nil)
    try loop.runOnce(wait: false)
    #expect(result != nil)
  }

  @Test func jitterSpreadsDelaysWithinLatencyPlusOrMinusJitter() throws {
    let clock = ManualClock()
    let start = clock.now
    let loop = try EventLoop(clock: clock)
    let probe = SimulationProbeBackend(loop: loop, clock: clock)
    let backend = SimulatedBackend(
      wrapping: probe, loop: loop, latency: .milliseconds(100), jitter: .milliseconds(30), seed: 7)
    for i in 0..<200 { backend.fetchFollowing(EntityKey(kind: "artist", id: "a\(i)")) { _ in } }
    for _ in 0...140 {
      try loop.runOnce(wait: false)
      clock.advance(by: .milliseconds(1))
    }
    #expect(probe.calls.count == 200)
    let delaysMs = probe.arrivals.map { Int(($0 - start) / .milliseconds(1)) }
    #expect(delaysMs.allSatisfy { (70...130).contains($0) })
    #expect(delaysMs.min()! < 80 && delaysMs.max()! > 120)
  }

  /// Which of `count` calls fail with this seed, as a string of 0s and 1s.
  private func failurePattern(seed: UInt64, rate: Double, count: Int = 1000) throws -> [Bool] {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    let probe = SimulationProbeBackend(loop: loop, clock: clock)
    let backend = SimulatedBackend(
      wrapping: probe, loop: loop, latency: .milliseconds(10), jitter: .milliseconds(5), failureRate: rate, seed: seed)
    var outcomes = [Bool?](repeating: nil, count: count)
    for i in 0..<count {
      backend.setFollowing(EntityKey(kind: "artist", id: "a\(i)"), true) { result in
        if case .failure = result { outcomes[i] = true } else { outcomes[i] = false }
      }
    }
    clock.advance(by: .milliseconds(20))
    for _ in 0..<3 { try loop.runOnce(wait: false) }
    #expect(outcomes.allSatisfy { $0 != nil })
    let failed = outcomes.map { $0 == true }
    // Failed calls never reached the wrapped backend; the others all did.
    #expect(probe.calls.count == failed.filter { !$0 }.count)
    #expect(backend.injectedFailureCount == failed.filter { $0 }.count)
    return failed
  }

  @Test func failuresAreReproducibleFromTheSeed() throws {
    let first = try failurePattern(seed: 42, rate: 0.3)
    let again = try failurePattern(seed: 42, rate: 0.3)
    let other = try failurePattern(seed: 43, rate: 0.3)
    #expect(first == again)
    #expect(first != other)
    let rate = Double(first.filter { $0 }.count) / Double(first.count)
    #expect(rate > 0.25 && rate < 0.35)
    #expect(try failurePattern(seed: 42, rate: 0).allSatisfy { !$0 })
    #expect(try failurePattern(seed: 42, rate: 1).allSatisfy { $0 })
  }

  @Test func aFailedFollowNeverReachesTheWrappedBackend() throws {
    let temp = try LocalBackendTestFolder()
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    let local = try LocalBackend(loop: loop, folder: temp.folder)
    let backend = SimulatedBackend(wrapping: local, loop: loop, latency: .milliseconds(5), failureRate: 1, seed: 3)
    var result: Result<FollowAnswer, FollowFailure>?
    backend.setFollowing(banksy, true) { result = $0 }
    clock.advance(by: .milliseconds(5))
    for _ in 0..<3 { try loop.runOnce(wait: false) }
    #expect(result == .failure(FollowFailure(.unavailable, "simulated network failure (follow artist/banksy)")))
    #expect(!local.isFollowing(banksy))
    #expect(local.saveCount == 0)
    #expect(backend.callCount == 1)
  }

  @Test(
    arguments: [
      (nil, FollowFailure.Kind.unavailable),
      (500, .unavailable),
      (503, .unavailable),
      (429, .unavailable),
      (401, .unauthorized(status: 401)),
      (403, .unauthorized(status: 403)),
      (400, .rejected(status: 400)),
      (404, .rejected(status: 404)),
      (409, .rejected(status: 409)),
    ] as [(Int?, FollowFailure.Kind)])
  func theFailureStatusChoosesTheKindOfFailure(status: Int?, kind: FollowFailure.Kind) throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    let probe = SimulationProbeBackend(loop: loop, clock: clock)
    let backend = SimulatedBackend(
      wrapping: probe, loop: loop, latency: .milliseconds(1), failureRate: 1, failureStatus: status, seed: 9)
    var failure: FollowFailure?
    backend.fetchFollowing(banksy) { if case .failure(let f) = $0 { failure = f } }
    clock.advance(by: .milliseconds(1))
    try loop.runOnce(wait: false)
    #expect(failure?.kind == kind)
    #expect(failure?.isRetryable == (kind == .unavailable))
    #expect(probe.calls.isEmpty)
  }

  @Test func theSettingsInitializerUsesTheSettingsAndTheSeed() throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    let probe = SimulationProbeBackend(loop: loop, clock: clock)
    let settings = SimulationSettings(latency: .milliseconds(20))
    let backend = SimulatedBackend(wrapping: probe, loop: loop, settings: settings, seed: 5)
    #expect(backend.settings.seed == 5)
    backend.fetchFollowing(banksy) { _ in }
    clock.advance(by: .milliseconds(19))
    try loop.runOnce(wait: false)
    #expect(probe.calls.isEmpty)
    clock.advance(by: .milliseconds(1))
    try loop.runOnce(wait: false)
    #expect(probe.calls == ["fetch artist/banksy"])
  }
}
