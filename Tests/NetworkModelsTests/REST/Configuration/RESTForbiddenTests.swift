import HTTP
import Testing

@testable import NetworkModels

/// What a 403 means (issue 27 §5): a refusal with the API's message (Mastodon's
/// "This action is not allowed" for following yourself), or the credentials judged
/// (a token without the scope), as the configuration's `forbidden` says.
@Suite struct RESTForbiddenTests {
  static func configuration(_ forbidden: String? = nil) -> String {
    #"{"environments": {"a": "http://127.0.0.1:1"}, "#
      + (forbidden.map { #""forbidden": \#($0), "# } ?? "")
        + #"""
        "kinds": {"account": {
          "follow": {"method": "POST", "path": "/accounts/{id}/follow", "onStatus": {"403": [
            {"means": "retry", "when": {"header": "x-ratelimit-remaining", "equals": "0"}}]}},
          "unfollow": {"method": "POST", "path": "/accounts/{id}/unfollow"},
          "state": {"method": "GET", "path": "/accounts/{id}"}}}}
        """#
  }

  func failure(_ body: String, headers: [(String, String)] = [], forbidden: String? = nil) throws -> FollowFailure? {
    let configuration = try RESTConfiguration.parse(Self.configuration(forbidden))
    let follow = try #require(configuration.kinds["account"]).follow
    let response = HTTPResponse(
      status: 403, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8))
    let outcome: Result<Bool, FollowFailure> = RESTSession.outcome(
      .success(response), follow, forbidden: configuration.forbidden, meaning: { _ in .success(true) }
    ) { _ in .success(true) }
    guard case .failure(let failure) = outcome else { return nil }
    return failure
  }

  @Test func aMessageAboutTheActionIsARefusalWithIt() throws {
    let failure = try #require(try failure(#"{"error": "This action is not allowed"}"#))
    #expect(failure.kind == .rejected(status: 403))
    #expect(failure.message == "HTTP 403 from POST /accounts/{id}/follow: This action is not allowed")
    #expect(!failure.isRetryable)
  }

  @Test(arguments: [
    #"{"error": "This action is outside the authorized scopes"}"#, #"{"error": "The access TOKEN was revoked"}"#,
    #"{"error": "Your login is currently disabled"}"#, "", "<html>Forbidden</html>", #"{"error": ""}"#,
    #"{"error": {"code": 403, "message": "quota"}}"#, #"{"message": "Must have admin rights to Repository."}"#,
  ])
  func anythingElseWaitsForCredentials(body: String) throws {
    let failure = try #require(try failure(body))
    #expect(failure.kind == .unauthorized(status: 403))
  }

  @Test func anOnStatusRuleComesFirst() throws {
    let failure = try #require(
      try failure(#"{"error": "This action is not allowed"}"#, headers: [("x-ratelimit-remaining", "0")]))
    #expect(failure.kind == .unavailable && failure.message.contains("(rate limited)"))
  }

  @Test func theConfigurationChoosesPerAPI() throws {
    let notAllowed = #"{"error": "This action is not allowed"}"#
    #expect(try failure(notAllowed, forbidden: #""credentials""#)?.kind == .unauthorized(status: 403))
    #expect(try failure("", forbidden: #""refusal""#)?.kind == .rejected(status: 403))
    // GitHub's `message`, every word a refusal but the token's.
    let github = #"{"messages": ["/message"], "credentialWords": ["Token"]}"#
    let admin = try #require(try failure(#"{"message": "Must have admin rights"}"#, forbidden: github))
    #expect(admin.kind == .rejected(status: 403) && admin.message.hasSuffix(": Must have admin rights"))
    let token = #"{"message": "Resource not accessible by personal access token"}"#
    #expect(try failure(token, forbidden: github)?.kind == .unauthorized(status: 403))
    // A message read at another pointer is the one shown.
    let deep = try #require(
      try failure(#"{"detail": {"why": "blocked"}}"#, forbidden: #"{"messages": ["/detail/why"]}"#))
    #expect(deep.kind == .rejected(status: 403) && deep.message.hasSuffix("/follow: blocked"))
  }

  @Test(arguments: [
    (#""sometimes""#, "/forbidden"), ("403", "/forbidden"), (#"{"messages": []}"#, "/forbidden/messages"),
    (#"{"messages": ["error"]}"#, "/forbidden/messages/0"),
    (#"{"credentialWords": ["ok", ""]}"#, "/forbidden/credentialWords/1"),
    (#"{"credentialWords": ["jeton\u00E9"]}"#, "/forbidden/credentialWords/0"),
    (#"{"credentialWords": "token"}"#, "/forbidden/credentialWords"),
    (#"{"words": []}"#, "/forbidden/words"),
  ])
  func mistakesAreRefusedWithTheirPath(forbidden: String, path: String) throws {
    do {
      _ = try RESTConfiguration.parse(Self.configuration(forbidden))
      Issue.record("accepted")
    } catch {
      #expect(error.path == path)
    }
  }
}
