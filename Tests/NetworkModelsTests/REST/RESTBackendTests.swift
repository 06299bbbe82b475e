import EventLoop
import HTTP
import JSON
import NetworkModels
import Posix
import TestSupport
import Testing

/// The REST backend under the follow store, against a real HTTP server on loopback
/// (same loop): every quirk of the configuration, batching, and the failures a real
/// API has. Call counts are read from the server.
final class RESTFixture: StoreDriving {
  let loop: EventLoop
  let server: LoopbackHTTPServer
  let backend: RESTBackend
  let store: FollowStore

  init(
    token: String? = nil, timeoutMs: Int = 2000, intentLog: IntentLog? = nil, edit: (String) -> String = { $0 }
  ) throws {
    loop = try EventLoop()
    server = try LoopbackHTTPServer(loop: loop)
    let text = edit(artsyLikeConfiguration).replacingOccurrences("http://127.0.0.1:1", server.baseURL)
      .replacingOccurrences(#""timeoutMs": 2000"#, #""timeoutMs": \#(timeoutMs)"#)
    let configuration = try RESTConfiguration.parse(text)
    backend = RESTBackend(configuration: configuration, loop: loop, environmentVariables: { _ in token })
    store = FollowStore(loop: loop, backend: backend, policy: configuration.retry, intentLog: intentLog)
    store.kindPolicies = configuration.kinds.compactMapValues(\.retry)
  }

}

extension Result {
  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}

@Suite struct RESTBackendTests {
  let profile = EntityKey(kind: "profile", id: "gagosian")
  let banksy = EntityKey(kind: "artist", id: "banksy")

  @Test func aStateCheckWhose404MeansNotFollowing() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .respond(status: 404, body: #"{"error":"Not Found"}"#) }
    let state = try f.read(profile).get()
    #expect(state.confirmed == false && state.following == false && state.error == nil)
    f.server.handler = { _ in .respond(status: 200, body: #"{"profile":{"id":"gagosian"}}"#) }
    #expect(try f.read(profile).get().confirmed == true)
    #expect(
      f.server.requests.map(\.path) == ["/api/v1/me/follow/profile/gagosian", "/api/v1/me/follow/profile/gagosian"])
  }

  /// `stats.backend.session.http.endpoints` (what `netmodel top` shows) counts single state
  /// reads, which are kept apart from the other calls' figures, and batched ones.
  @Test func endpointFiguresCountSingleAndBatchedReads() throws {
    let f = try RESTFixture()
    f.server.handler = { request in
      request.path.hasPrefix("/api/v1/me/follow/profile/")
        ? .respond(status: 200, body: #"{"profile":{"id":"gagosian"}}"#) : .respond(status: 404)
    }
    _ = try f.read(profile)
    _ = try f.read(banksy)
    let endpoints = f.backend.statistics.httpStatistics.endpoints
    #expect(endpoints["profile.state"]?.finished == 1 && endpoints["profile.state"]?.inFlight == 0)
    #expect(endpoints["artist.state"]?.finished == 1 && endpoints["artist.state"]?.inFlight == 0)
  }

  @Test func anUnfollowWhose404MeansAlreadyDone() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .respond(status: 404) }
    let state = try f.set(banksy, false).get()
    #expect(state.confirmed == false && state.error == nil && !state.pending)
    #expect(f.server.requests.map(\.method) == ["DELETE"])
  }

  @Test func aFollowAnsweringTheWholeObjectFillsAttributes() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in
      .respond(status: 201, body: #"{"id":"f1","artist":{"id":"banksy","name":"Banksy","birthday":""}}"#)
    }
    let state = try f.set(banksy, true).get()
    #expect(state.confirmed == true)
    let attributes = try JSON.parse(try #require(state.attributes))
    #expect(attributes["name"]?.string == "Banksy")
    #expect(f.server.requests.first?.body == "artist_id=banksy")
  }

  @Test func fiftyReadsOfDistinctIDsAreOneBatchedCall() throws {
    let f = try RESTFixture()
    f.server.handler = { request in
      // The followed subset: the even-numbered artists among those asked for.
      let ids = request.query.split(separator: "&").map { String($0.dropFirst("artists[]=".count)) }
      let followed = ids.filter { Int($0.dropFirst(1))! % 2 == 0 }.map { #"{"artist":{"id":"\#($0)"}}"# }
      return .respond(status: 200, body: "[" + followed.joined(separator: ",") + "]")
    }
    var states: [String: Bool] = [:]
    for index in 0..<50 {
      f.store.read(EntityKey(kind: "artist", id: "a\(index)"), maxAgeMs: 0) { result in
        if case .success(let state) = result { states[state.key.id] = state.confirmed }
      }
    }
    try f.run { states.count == 50 }
    #expect(f.server.requests.count == 1)
    #expect(f.server.requests.first?.query.split(separator: "&").count == 50)
    #expect((0..<50).allSatisfy { states["a\($0)"] == ($0 % 2 == 0) })
  }

  /// Artsy's batched check answers 404 when none of the ids is followed, and eigen reads
  /// it as "not following" (examples/artsy/ENDPOINTS.md): the meaning holds for every id
  /// of that call, as "following" would.
  @Test(arguments: [("404", "notFollowing", false), ("299", "following", true)])
  func aStatusMeaningOfABatchedCallHoldsForEveryID(status: String, meaning: String, following: Bool) throws {
    let f = try RESTFixture(edit: {
      $0.replacingOccurrences(#""onStatus": {"404": "notFollowing"}}"#, #""onStatus": {"\#(status)": "\#(meaning)"}}"#)
    })
    f.server.handler = { _ in .respond(status: Int(status)!, body: #"{"error":"Artist Not Followed"}"#) }
    var answers: [String: Result<EntityState, FollowStore.SettleFailure>] = [:]
    for id in ["a1", "a2", "a3"] {
      f.store.read(EntityKey(kind: "artist", id: id), maxAgeMs: 0) { answers[id] = $0 }
    }
    try f.run { answers.count == 3 }
    #expect(f.server.requests.count == 1)
    let states = answers.values.compactMap { try? $0.get() }
    #expect(states.count == 3, "\(answers.values.compactMap(\.failure))")
    #expect(states.allSatisfy { $0.confirmed == following && $0.error == nil })
  }

  @Test func readsBeyondTheBatchLimitGoInMoreCalls() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .respond(status: 200, body: "[]") }
    var answered = 0
    for index in 0..<120 {
      f.store.read(EntityKey(kind: "artist", id: "a\(index)"), maxAgeMs: 0) { _ in answered += 1 }
    }
    try f.run { answered == 120 }
    #expect(f.server.requests.map { $0.query.split(separator: "&").count } == [50, 50, 20])
  }

  @Test func aHundredReadsOfOneIDAreOneCall() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .after(milliseconds: 20, .respond(status: 200, body: "{}")) }
    var answered = 0
    for _ in 0..<100 { f.store.read(profile, refresh: true, maxAgeMs: 0) { _ in answered += 1 } }
    try f.run { answered == 100 }
    #expect(f.server.requests.count == 1)
  }

  @Test func transientFailuresAreRetriedThenSucceed() throws {
    let f = try RESTFixture(timeoutMs: 150)
    var call = 0
    f.server.handler = { _ in
      call += 1
      switch call {
      case 1: return .respond(status: 503)
      case 2: return .drop
      default: return .respond(status: 201, body: "{}")
      }
    }
    let state = try f.set(banksy, true).get()
    #expect(state.confirmed == true && state.error == nil)
    #expect(f.server.requests.count == 3)
    // libcurl itself resends once on a reused connection that dies before any answer,
    // so the drop may cost the store no retry of its own.
    #expect(f.store.counters.retries >= 1)
  }

  @Test func aHangingServerTimesOutAndIsRetriedNothingStuck() throws {
    let f = try RESTFixture(timeoutMs: 100)
    var call = 0
    f.server.handler = { _ in
      call += 1
      return call == 1 ? .hang : .respond(status: 201, body: "{}")
    }
    let state = try f.set(banksy, true).get()
    #expect(state.confirmed == true && !state.pending)
    #expect(f.backend.session.http.inFlight == 0)
  }

  @Test func retryAfterIsHonoured() throws {
    let f = try RESTFixture()
    var call = 0
    f.server.handler = { _ in
      call += 1
      return call == 1 ? .respond(status: 429, headers: [("Retry-After", "1")]) : .respond(status: 201, body: "{}")
    }
    let started = Process.monotonicNanoseconds()
    _ = try f.set(banksy, true).get()
    #expect(Process.monotonicNanoseconds() - started >= 1_000_000_000)
    #expect(f.server.requests.count == 2)
  }

  @Test func exhaustedRetriesRollBack() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .respond(status: 500) }
    let failure = try #require(try f.set(banksy, true).failure)
    #expect(failure.failure.kind == .unavailable)
    #expect(failure.state.following == nil && failure.state.error != nil)
    #expect(f.server.requests.count == 3)  // the first call and maxRetries = 2
  }

  @Test func aKindsOwnRetryPolicyWins() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .respond(status: 503) }
    let failure = try #require(try f.set(EntityKey(kind: "show", id: "s1"), true).failure)
    #expect(failure.failure.kind == .unavailable)
    #expect(f.server.requests.count == 1)  // show: maxRetries 0
  }

  @Test func aBadRequestRollsBackWithTheStatus() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .respond(status: 400, body: #"{"error":"bad"}"#) }
    let failure = try #require(try f.set(banksy, true).failure)
    #expect(failure.failure.kind == .rejected(status: 400))
    #expect(failure.state.following == nil && !failure.state.pending)
    #expect(f.server.requests.count == 1)
  }

  @Test func unauthorizedUntilATokenIsConfigured() throws {
    let f = try RESTFixture()
    f.server.handler = { request in
      request.headers["x-access-token"] == "s3cret" ? .respond(status: 201, body: "{}") : .respond(status: 401)
    }
    let failure = try #require(try f.set(banksy, true).failure)
    #expect(failure.failure.kind == .unauthorized(status: 401))
    #expect(failure.state.pending && failure.state.following == true, "the intent waits for credentials")
    // As `configure {authToken}` does: the new token, then the waiting intent goes out.
    f.backend.session.setAuthToken("s3cret")
    f.store.credentialsChanged()
    let state = try f.set(banksy, true).get()
    #expect(state.confirmed == true && state.error == nil)
  }

  @Test func aBooleanAtAPointerAndANonEmptyAnswer() throws {
    let f = try RESTFixture()
    f.server.handler = { request in
      switch request.path {
      case "/genes/pop-art": return .respond(status: 200, body: #"{"id":"pop-art","is_followed":true}"#)
      case "/genes/cubism": return .respond(status: 200, body: #"{"id":"cubism","is_followed":false}"#)
      default: return .respond(status: 200, body: request.query == "show_id=s1" ? #"[{"id":"f"}]"# : "[]")
      }
    }
    #expect(try f.read(EntityKey(kind: "gene", id: "pop-art")).get().confirmed == true)
    #expect(try f.read(EntityKey(kind: "gene", id: "cubism")).get().confirmed == false)
    #expect(try f.read(EntityKey(kind: "show", id: "s1")).get().confirmed == true)
    #expect(try f.read(EntityKey(kind: "show", id: "s2")).get().confirmed == false)
  }

  @Test func anUnknownKindIsRefusedWithoutACall() throws {
    let f = try RESTFixture()
    let failure = try #require(try f.set(EntityKey(kind: "fair", id: "x"), true).failure)
    #expect(failure.failure.kind == .unknownKind)
    #expect(f.server.requests.isEmpty)
  }

  @Test func connectionsStayWithinTheInFlightLimit() throws {
    let f = try RESTFixture()
    f.server.handler = { _ in .after(milliseconds: 5, .respond(status: 201, body: "{}")) }
    var settled = 0
    for index in 0..<60 {
      f.store.setFollowing(EntityKey(kind: "profile", id: "p\(index)"), true) { _ in settled += 1 }
    }
    try f.run { settled == 60 }
    #expect(f.server.requests.count == 60)
    #expect(f.server.connectionsAccepted <= 4)
  }
}

extension String {
  func replacingOccurrences(_ target: String, _ replacement: String) -> String {
    split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
  }
}
