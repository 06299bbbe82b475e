import EventLoop
import HTTP
import NetworkModels
import Posix
import TestSupport
import Testing

/// Status meanings chosen by the answer's body (issue 11): YouTube's 403 is a spent
/// quota or a refused token depending on `/error/errors/0/reason`, its 400
/// `subscriptionDuplicate` a follow that exists; GitHub's secondary rate limit says so
/// only in its message, sometimes without a `retry-after` ("wait for at least one
/// minute", the rule's `waitMs`). Against a real HTTP server on loopback.
@Suite struct RESTBodyStatusRuleTests {
  static let configuration = #"""
    {
      "environments": {"test": "http://127.0.0.1:1"},
      "retry": {"maxRetries": 3, "baseDelayMs": 10, "maxDelayMs": 40, "maxWaitMs": 5000},
      "kinds": {
        "channel": {
          "follow": {"method": "POST", "path": "/subscriptions/{id}", "onStatus": {
            "400": {"means": "following", "when": {"pointer": "/error/errors/0/reason", "equals": "subscriptionDuplicate"}},
            "403": [{"means": "retry", "when": {"pointer": "/error/errors/0/reason", "equals": "quotaExceeded"}}]}},
          "unfollow": {"method": "DELETE", "path": "/subscriptions/{id}"},
          "state": {"method": "GET", "path": "/subscriptions/{id}", "onStatus": {"404": "notFollowing"}}
        },
        "user": {
          "follow": {"method": "PUT", "path": "/user/following/{id}", "onStatus": {"403": [
            {"means": "retry", "when": {"header": "retry-after"}},
            {"means": "retry", "waitMs": 60000, "when": {"pointer": "/message", "contains": "secondary rate limit"}}]}},
          "unfollow": {"method": "DELETE", "path": "/user/following/{id}"},
          "state": {"method": "GET", "path": "/user/following/{id}", "onStatus": {"404": "notFollowing", "409": [
            {"means": "following", "when": {"pointer": "/code", "equals": "409"}},
            {"means": "following", "when": {"pointer": "/following", "equals": "true"}},
            {"means": "notFollowing", "when": {"pointer": "/blocked"}}]}}
        }
      }
    }
    """#
  let channel = EntityKey(kind: "channel", id: "UCdemo")
  let user = EntityKey(kind: "user", id: "octocat")

  static func google(_ status: Int, _ reason: String) -> String {
    #"{"error":{"code":\#(status),"message":"m","errors":[{"domain":"youtube","reason":"\#(reason)"}]}}"#
  }

  func answer(_ status: Int, _ body: String) -> HTTPResponse {
    HTTPResponse(status: status, body: Array(body.utf8))
  }

  func follow() throws -> RESTConfiguration.Endpoint {
    try #require(try RESTConfiguration.parse(Self.configuration).kinds["channel"]).follow
  }

  @Test func aPointerRuleComparesTheValueAtThePointer() throws {
    let follow = try follow()
    #expect(follow.meaning(of: answer(403, Self.google(403, "quotaExceeded"))) == .retry)
    #expect(follow.meaning(of: answer(403, Self.google(403, "forbidden"))) == nil)
    #expect(follow.meaning(of: answer(400, Self.google(400, "subscriptionDuplicate"))) == .following)
    // Another status's rule never applies, whatever the body says.
    #expect(follow.meaning(of: answer(400, Self.google(400, "quotaExceeded"))) == nil)
    // An answer that is not JSON, or has nothing there, fails the rule: the default meaning stays.
    #expect(follow.meaning(of: answer(403, "quotaExceeded")) == nil)
    #expect(follow.meaning(of: answer(403, #"{"error":{"errors":[]}}"#)) == nil)
    #expect(follow.meaning(of: HTTPResponse(status: 403)) == nil)
  }

  @Test func numbersAndBooleansCompareAsTheirJSONTextAndAPointerAloneNeedsAValue() throws {
    let state = try #require(try RESTConfiguration.parse(Self.configuration).kinds["user"]).state.endpoint
    func meaning(_ body: String) -> RESTConfiguration.StatusMeaning? {
      state.meaning(of: answer(409, body))
    }
    #expect(meaning(#"{"code":409}"#) == .following)
    #expect(meaning(#"{"code":"409"}"#) == .following)
    #expect(meaning(#"{"code":409.0}"#) == nil)
    #expect(meaning(#"{"following":true}"#) == .following)
    #expect(meaning(#"{"following":false}"#) == nil)
    #expect(meaning(#"{"blocked":false}"#) == .notFollowing)
    #expect(meaning(#"{"blocked":null}"#) == nil)
    #expect(meaning(#"{"blocked":{}}"#) == .notFollowing)
  }

  @Test func containsFindsAPartOfTheValueCaseSensitively() throws {
    let follow = try #require(try RESTConfiguration.parse(Self.configuration).kinds["user"]).follow
    let secondary = #"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes."}"#
    #expect(follow.meaning(of: answer(403, secondary)) == .retry)
    #expect(follow.meaning(of: answer(403, #"{"message":"Secondary Rate Limit"}"#)) == nil)
    #expect(follow.meaning(of: answer(403, #"{"message":"Must have admin rights"}"#)) == nil)
  }

  @Test func aSpentQuotaIsRetriedNotACredentialsProblem() throws {
    let f = try RESTFixture(edit: { _ in Self.configuration })
    f.server.handler = { _ in .respond(status: 403, body: Self.google(403, "quotaExceeded")) }
    let failure = try #require(try f.set(channel, true).failure).failure
    #expect(failure.kind == .unavailable)
    #expect(f.server.requests.count == 4)  // the first try and maxRetries 3
  }

  @Test func aRefusalWithAnotherReasonKeepsItsDefaultMeaning() throws {
    let f = try RESTFixture(edit: { _ in Self.configuration })
    f.server.handler = { _ in .respond(status: 403, body: Self.google(403, "forbidden")) }
    let failure = try #require(try f.set(channel, true).failure).failure
    #expect(failure.kind == .unauthorized(status: 403))
    #expect(f.server.requests.count == 1)
  }

  @Test func aDuplicateSubscriptionConfirmsTheFollow() throws {
    let f = try RESTFixture(edit: { _ in Self.configuration })
    f.server.handler = { _ in .respond(status: 400, body: Self.google(400, "subscriptionDuplicate")) }
    #expect(try f.set(channel, true).get().confirmed == true)
    f.server.handler = { _ in .respond(status: 400, body: Self.google(400, "invalidValue")) }
    let other = EntityKey(kind: "channel", id: "UCother")
    #expect(try #require(try f.set(other, true).failure).failure.kind == .rejected(status: 400))
  }

  @Test func aRetryRuleWithoutATimeInTheAnswerWaitsItsWaitMs() throws {
    let f = try RESTFixture(edit: { _ in Self.configuration })
    f.server.handler = { _ in
      .respond(status: 403, body: #"{"message":"You have exceeded a secondary rate limit."}"#)
    }
    let failure = try #require(try f.set(user, true).failure).failure
    // 60 s is beyond retry.maxWaitMs (5 s): failed at once with the time left, nothing resent.
    #expect(failure.kind == .unavailable)
    #expect(failure.retryAfter.map { $0 > .seconds(59) && $0 <= .seconds(60) } == true)
    #expect(f.backend.session.http.holdRemaining.map { $0 > .seconds(59) } == true)
    #expect(f.server.requests.count == 1)
  }

  @Test func aRetryAfterInTheAnswerWinsOverWaitMs() throws {
    let f = try RESTFixture(edit: { _ in Self.configuration })
    var calls = 0
    f.server.handler = { _ in
      calls += 1
      return calls == 1
        ? .respond(
          status: 403, headers: [("retry-after", "1")], body: #"{"message":"exceeded a secondary rate limit"}"#)
        : .respond(status: 204)
    }
    #expect(try f.set(user, true).get().confirmed == true)
    #expect(calls == 2)
  }

  @Test func aFollowConfirmedByItsDuplicateForgetsAnEarlierCapturedValue() throws {
    let configuration = #"""
      {
        "environments": {"test": "http://127.0.0.1:1"},
        "kinds": {"channel": {
          "follow": {"method": "POST", "path": "/subscriptions", "query": {"channel": "{id}"},
                     "capture": {"subscriptionId": "/id"}, "onStatus": {"400":
                       {"means": "following", "when": {"pointer": "/error/errors/0/reason", "equals": "subscriptionDuplicate"}}}},
          "unfollow": {"method": "DELETE", "path": "/subscriptions", "query": {"id": "{subscriptionId}"}},
          "state": {"method": "GET", "path": "/subscriptions", "query": {"forChannelId": "{ids}"},
                    "batch": {"join": ",", "items": "/items", "id": "/channelId", "windowMs": 1},
                    "capture": {"subscriptionId": "/id"}}
        }}
      }
      """#
    let f = try RESTFixture(edit: { _ in configuration })
    f.server.handler = { _ in .respond(status: 200, body: #"{"id":"s1","channelId":"UCdemo"}"#) }
    func follow() throws -> Result<FollowAnswer, FollowFailure> {
      var result: Result<FollowAnswer, FollowFailure>?
      f.backend.setFollowing(channel, true) { result = $0 }
      try f.run { result != nil }
      return try #require(result)
    }
    #expect(try follow().get() == .following)
    #expect(f.backend.session.capturedValues.values(of: channel, in: "test") == ["subscriptionId": "s1"])
    // Deleted and made again elsewhere (s2): the follow meets the duplicate.
    f.server.handler = { request in
      switch request.method {
      case "POST": return .respond(status: 400, body: Self.google(400, "subscriptionDuplicate"))
      case "GET": return .respond(status: 200, body: #"{"items":[{"id":"s2","channelId":"UCdemo"}]}"#)
      default: return .respond(status: 204)
      }
    }
    #expect(try follow().get() == .following)
    #expect(f.backend.session.capturedValues.values(of: channel, in: "test").isEmpty)
    var unfollowed: Result<FollowAnswer, FollowFailure>?
    f.backend.setFollowing(channel, false) { unfollowed = $0 }
    try f.run { unfollowed != nil }
    #expect(try unfollowed?.get() == .notFollowing)
    let sent = f.server.requests.suffix(2).map { "\($0.method) \($0.query)" }
    #expect(sent == ["GET forChannelId=UCdemo", "DELETE id=s2"])
  }
}
