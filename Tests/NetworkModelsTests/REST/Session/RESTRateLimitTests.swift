import EventLoop
import HTTP
import NetworkModels
import Posix
import TestSupport
import Testing

/// GitHub's rate limits as configuration (issue 11): a 403 is a rate limit only with
/// `x-ratelimit-remaining: 0` (or a `retry-after`), its wait is honoured by every
/// request of the API, and a wait beyond `retry.maxWaitMs` fails a mutation at once.
/// Against a real HTTP server on loopback; the wall clock is fixed.
@Suite struct RESTRateLimitTests {
  static let configuration = #"""
    {
      "environments": {"test": "http://127.0.0.1:1"},
      "retry": {"maxRetries": 3, "baseDelayMs": 10, "maxDelayMs": 40, "maxWaitMs": 5000},
      "rateLimit": {"resetHeader": "x-ratelimit-reset", "remainingHeader": "x-ratelimit-remaining"},
      "kinds": {
        "user": {
          "follow": {"method": "PUT", "path": "/user/following/{id}", "onStatus": {"403": [
            {"means": "retry", "when": {"header": "x-ratelimit-remaining", "equals": "0"}},
            {"means": "retry", "when": {"header": "retry-after"}}]}},
          "unfollow": {"method": "DELETE", "path": "/user/following/{id}"},
          "state": {"method": "GET", "path": "/user/following/{id}", "onStatus": {"404": "notFollowing"}}
        },
        "repo": {
          "follow": {"method": "PUT", "path": "/user/starred/{id*}"},
          "unfollow": {"method": "DELETE", "path": "/user/starred/{id*}"},
          "state": {"method": "GET", "path": "/user/starred/{id*}", "onStatus": {"404": "notFollowing"}}
        }
      }
    }
    """#
  static let now = 2_000_000_000.0
  let user = EntityKey(kind: "user", id: "octocat")
  let repo = EntityKey(kind: "repo", id: "octocat/hello-world")

  func fixture() throws -> RESTFixture {
    let f = try RESTFixture(edit: { _ in Self.configuration })
    f.backend.session.wallClock = { Self.now }
    return f
  }

  @Test func aPrimaryRateLimitHoldsEveryKindUntilItsReset() throws {
    let f = try fixture()
    var arrivals: [UInt64] = []
    f.server.handler = { _ in
      arrivals.append(Process.monotonicNanoseconds())
      guard arrivals.count == 1 else { return .respond(status: 204) }
      return .respond(
        status: 403, headers: [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "2000000001")],
        body: #"{"message":"API rate limit exceeded"}"#)
    }
    var followed: Result<EntityState, FollowStore.SettleFailure>?
    f.store.setFollowing(user, true) { followed = $0 }
    try f.run { f.backend.session.http.holdRemaining != nil }
    var read: Result<EntityState, FollowStore.SettleFailure>?
    f.store.read(repo, refresh: true, maxAgeMs: 0) { read = $0 }
    try f.run { followed != nil && read != nil }
    #expect(try followed?.get().confirmed == true)
    #expect(try read?.get().confirmed == true)
    #expect(arrivals.count == 3)
    #expect(arrivals.dropFirst().allSatisfy { $0 - arrivals[0] >= 1_000_000_000 })
  }

  /// The HTTP client sends the next waiting request before the models read an answer:
  /// a rate limit must hold it still, whether the answer was a change's or a read's.
  /// One connection, so the next request waits for the answer that limits.
  @Test(arguments: [true, false])
  func aRateLimitHoldsTheRequestWaitingBehindItsAnswer(firstIsAFollow: Bool) throws {
    let f = try RESTFixture(edit: { _ in
      Self.configuration.replacingOccurrences(#""kinds": {"#, #""maxInFlight": 1, "kinds": {"#)
    })
    f.backend.session.wallClock = { Self.now }
    var arrivals: [(path: String, at: UInt64)] = []
    f.server.handler = { request in
      arrivals.append((request.path, Process.monotonicNanoseconds()))
      guard arrivals.count == 1 else { return .respond(status: 204) }
      return .respond(status: 429, headers: [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "2000000001")])
    }
    var settled = 0
    if firstIsAFollow {
      f.store.setFollowing(user, true) { _ in settled += 1 }
    } else {
      f.store.read(user, refresh: true, maxAgeMs: 0) { _ in settled += 1 }
    }
    f.store.read(repo, refresh: true, maxAgeMs: 0) { _ in settled += 1 }
    f.store.setFollowing(EntityKey(kind: "repo", id: "octocat/spoon-knife"), true) { _ in settled += 1 }
    try f.run { settled == 3 }
    #expect(arrivals.count >= 3)
    let waited = arrivals.dropFirst().map { $0.at - arrivals[0].at }
    #expect(
      waited.allSatisfy { $0 >= 1_000_000_000 },
      "sent \(waited.map { $0 / 1_000_000 }) ms after the rate limit: \(arrivals.map(\.path))")
  }

  /// A change, or a read a caller waits for, queued behind the answer that brings a
  /// rate limit longer than `retry.maxWaitMs` fails at once as one sent after it would,
  /// unsent and uncounted; a preload's read waits for the limit to end.
  @Test func aChangeQueuedBehindALongRateLimitFailsAtOnceUnsent() throws {
    let f = try RESTFixture(edit: { _ in
      Self.configuration.replacingOccurrences(#""kinds": {"#, #""maxInFlight": 1, "kinds": {"#)
    })
    f.backend.session.wallClock = { Self.now }
    f.server.handler = { _ in
      .respond(status: 429, headers: [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "2000000060")])
    }
    let spoon = EntityKey(kind: "repo", id: "octocat/spoon-knife")
    var read: Result<EntityState, FollowStore.SettleFailure>?
    var followed: Result<EntityState, FollowStore.SettleFailure>?
    var awaitedRead: Result<EntityState, FollowStore.SettleFailure>?
    let started = Process.monotonicNanoseconds()
    f.store.read(repo, refresh: true, maxAgeMs: 0) { read = $0 }
    f.store.setFollowing(user, true) { followed = $0 }
    f.store.read(spoon, refresh: true, maxAgeMs: 0) { awaitedRead = $0 }
    f.backend.session.readPriority = .preload
    var preloaded = false
    f.store.read(EntityKey(kind: "repo", id: "octocat/linguist"), refresh: true, maxAgeMs: 0) { _ in preloaded = true }
    f.backend.session.readPriority = .user
    try f.run { read != nil && followed != nil && awaitedRead != nil }
    #expect(Process.monotonicNanoseconds() - started < 2_000_000_000)
    for outcome in [followed, awaitedRead] {
      let failure = try #require(outcome?.failure).failure
      #expect(failure.kind == .unavailable)
      #expect(failure.retryAfter.map { $0 > .seconds(58) && $0 <= .seconds(60) } == true)
      #expect(failure.message.contains("rate limit holds requests for another 60 s"), "\(failure.message)")
    }
    #expect(f.server.requests.map(\.path) == ["/user/starred/octocat/hello-world"])
    #expect(f.backend.statistics.calls["user.follow"] ?? 0 == 0, "never sent: not counted")
    #expect(f.backend.statistics.calls["repo.state"] == 2, "the read sent and the preload's, not the one given up")
    #expect(!preloaded && f.backend.session.http.waiting == 1, "a preload waits for the limit")
  }

  @Test func aSecondaryRateLimitsRetryAfterIsHonoured() throws {
    let f = try fixture()
    var arrivals: [UInt64] = []
    f.server.handler = { _ in
      arrivals.append(Process.monotonicNanoseconds())
      // GitHub sends x-ratelimit-reset on every answer: without remaining 0 it says nothing.
      return arrivals.count == 1
        ? .respond(
          status: 403,
          headers: [("retry-after", "1"), ("x-ratelimit-remaining", "4999"), ("x-ratelimit-reset", "2000003600")])
        : .respond(status: 204)
    }
    #expect(try f.set(user, true).get().confirmed == true)
    #expect(arrivals.count == 2 && arrivals[1] - arrivals[0] >= 1_000_000_000)
  }

  @Test func aResetBeyondMaxWaitFailsAtOnceWithTheTimeLeftAndSendsNothingMore() throws {
    let f = try fixture()
    f.server.handler = { _ in
      .respond(status: 403, headers: [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "2000000060")])
    }
    let started = Process.monotonicNanoseconds()
    let failure = try #require(try f.set(user, true).failure).failure
    #expect(failure.kind == .unavailable)
    #expect(failure.retryAfter.map { $0 > .seconds(59) && $0 <= .seconds(60) } == true)
    let other = try #require(try f.set(repo, true).failure).failure
    #expect(other.kind == .unavailable && other.retryAfter.map { $0 > .seconds(58) } == true)
    #expect(f.server.requests.count == 1)
    #expect(Process.monotonicNanoseconds() - started < 2_000_000_000)
  }

  @Test func a403ThatIsNoRateLimitKeepsItsDefaultMeaning() throws {
    let f = try fixture()
    f.server.handler = { _ in .respond(status: 403, headers: [("x-ratelimit-remaining", "12")]) }
    let failure = try #require(try f.set(user, true).failure).failure
    #expect(failure.kind == .unauthorized(status: 403))
    #expect(f.backend.session.http.holdRemaining == nil && f.server.requests.count == 1)
  }

  @Test func theFirstRuleThatHoldsWins() throws {
    let configuration = try RESTConfiguration.parse(
      Self.configuration.replacingOccurrences(
        #"{"means": "retry", "when": {"header": "retry-after"}}]"#,
        #"{"means": "retry", "when": {"header": "retry-after"}}, {"means": "done"}]"#))
    let follow = try #require(configuration.kinds["user"]).follow
    let limited = HTTPResponse(status: 403, headers: [("X-RateLimit-Remaining", "0")])
    #expect(follow.meaning(of: limited) == .retry)
    #expect(follow.meaning(of: HTTPResponse(status: 403, headers: [("Retry-After", "5")])) == .retry)
    #expect(follow.meaning(of: HTTPResponse(status: 403, headers: [("x-ratelimit-remaining", "1")])) == .done)
    #expect(follow.meaning(of: HTTPResponse(status: 404)) == nil)
  }

  @Test func anIDSpanningSegmentsIsSentAsThemEachEncoded() throws {
    let f = try fixture()
    f.server.handler = { _ in .respond(status: 204) }
    #expect(try f.set(EntityKey(kind: "repo", id: "octo cat/hello-world"), true).get().confirmed == true)
    let state = try #require(f.backend.session.configuration.kinds["repo"]).state.endpoint
    #expect(f.backend.session.request(state, kind: "repo", id: "a/b?c").url.hasSuffix("/user/starred/a/b%3Fc"))
    let single = try #require(f.backend.session.configuration.kinds["user"]).state.endpoint
    #expect(f.backend.session.request(single, kind: "user", id: "a/b").url.hasSuffix("/user/following/a%2Fb"))
    #expect(f.server.requests.map(\.path) == ["/user/starred/octo%20cat/hello-world"])
  }

  @Test(arguments: ["a/..", "./b", "a//b", "a/", "/b", "a/b/../c"])
  func anIDWithAnEmptyOrDotSegmentIsRefused(id: String) throws {
    let f = try fixture()
    #expect(f.backend.follows.validatePlaceholders(kind: "repo", id: id)?.path == "/id")
    // As one segment (`{id}`), the same id is data.
    #expect(f.backend.follows.validatePlaceholders(kind: "user", id: id) == nil)
  }

  @Test func aDotsOnlyValueInsideAnIDIsOneOfItsSegments() throws {
    let f = try fixture()
    #expect(f.backend.follows.validatePlaceholders(kind: "repo", id: "a/...") == nil)
    #expect(f.backend.follows.validatePlaceholders(kind: "repo", id: "octocat/hello-world") == nil)
  }
}
