import Testing

@testable import HTTP

/// What a rate-limit hold's log line says of the API (docs/operations.md "Logs"): where it is, and
/// nothing of a URL that may carry a secret.
@Suite struct HoldLogTests {
  @Test func theOriginLeavesOutUserInfoPathAndQuery() {
    #expect(HTTPClient.origin("https://api.example.com/v1/me?token=s3cret") == "https://api.example.com")
    #expect(HTTPClient.origin("http://user:pw@127.0.0.1:8080/follow/x") == "http://127.0.0.1:8080")
    #expect(HTTPClient.origin("https://host?access_token=s3cret") == "https://host")
    #expect(HTTPClient.origin("not a url") == "")
  }

  @Test func theHeadersThatSayWhy() {
    for name in ["Retry-After", "retry-after", "X-RateLimit-Reset", "x-ratelimit-remaining", "RateLimit-Policy"] {
      #expect(HTTPClient.explainsHold(name), "\(name)")
    }
    for name in ["Content-Type", "Set-Cookie", "Authorization"] { #expect(!HTTPClient.explainsHold(name), "\(name)") }
  }
}
