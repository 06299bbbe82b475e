import NetworkModels
import Testing

@testable import NetworkModels

/// The token and values requests are asked under (RESTSession+World).
@Suite struct RESTWorldTests {
  let banksy = EntityKey(kind: "artist", id: "banksy")

  @Test func aTokenWithAControlByteIsRefusedAndThePreviousKept() throws {
    for bad in ["a\r\nX-Evil: 1", "a\nb", "a\rb", "a\u{0}b", "a\u{1B}b", "a\u{7F}b", "\t"] {
      #expect(AuthToken.problem(bad) != nil, "\(bad.debugDescription)")
    }
    for good in ["s3cret", "eyJ.a-b_c~d+/=", "café"] { #expect(AuthToken.problem(good) == nil) }
    let f = try RESTFixture(token: "first")
    f.server.handler = { _ in .respond(status: 200, body: #"{"profile":{"id":"gagosian"}}"#) }
    #expect(f.backend.session.setAuthToken("a\r\nX-Evil: 1") == .refused)
    #expect(f.backend.session.setAuthToken("first") == .unchanged)
    _ = try f.read(EntityKey(kind: "profile", id: "gagosian")).get()
    #expect(f.server.requests.last?.headers["x-access-token"] == "first")
    #expect(f.backend.session.setAuthToken("second") == .changed && f.backend.session.setAuthToken(nil) == .changed)
  }

  @Test func aTokenFromTheEnvironmentWithALineBreakIsNotTakenAndTheVariableIsNamed() throws {
    let f = try RESTFixture(token: "leak\r\nX-Evil: 1")
    let problem = try #require(f.backend.session.tokenProblem)
    #expect(problem.contains("$TEST_TOKEN") && !problem.contains("leak") && !problem.contains("Evil"))
  }

  /// A rate limit is the account's in one environment: another token or environment
  /// ends the hold, and the next read goes out at once.
  @Test func anotherTokenOrEnvironmentEndsTheHold() throws {
    let f = try RESTFixture(token: "first")
    let profile = EntityKey(kind: "profile", id: "gagosian")
    var answers = 0
    f.server.handler = { _ in
      answers += 1
      return answers == 1
        ? .respond(status: 429, headers: [("Retry-After", "600")])
        : .respond(status: 200, body: #"{"profile":{"id":"gagosian"}}"#)
    }
    #expect(try f.read(profile).failure?.failure.retryAfter.map { $0 > .seconds(590) } == true)
    #expect(f.backend.session.http.holdRemaining != nil)
    #expect(f.backend.session.setAuthToken("first") == .unchanged)
    #expect(f.backend.session.http.holdRemaining != nil, "the same token: the same account's limit")
    #expect(f.backend.session.setAuthToken("second") == .changed)
    #expect(f.backend.session.http.holdRemaining == nil, "another token's rate limit is its own")
    #expect(try f.read(profile).get().confirmed == true)
    #expect(f.server.requests.count == 2 && f.server.requests.last?.headers["x-access-token"] == "second")
    answers = 0
    #expect(try f.read(EntityKey(kind: "profile", id: "pace")).failure != nil)
    #expect(f.backend.session.http.holdRemaining != nil)
    #expect(f.backend.session.selectEnvironment("production"))
    #expect(f.backend.session.http.holdRemaining == nil, "another environment's rate limit is its own")
  }

  @Test func whatAValueReaches() throws {
    let f = try RESTFixture(token: "109", edit: { _ in valuesConfiguration })
    // {me} names the account's follow and state and the following list (whose items
    // are accounts); {app} is in a header every request carries.
    #expect(f.backend.session.usesOfValues(["me"]) == ValueUses(kinds: ["account"], lists: ["following"]))
    #expect(f.backend.session.usesOfValues(["app"]) == ValueUses(kinds: ["account"], lists: ["following"]))
    #expect(f.backend.session.usesOfValues(["other"]).isEmpty)
    #expect(f.backend.session.setValue("me", "110") == nil && f.backend.session.value("me") == "110")
  }
}
