import Testing

@testable import HTTP

/// Reset times in every form APIs send them (GitHub's epoch seconds, delta seconds,
/// RFC 9110's HTTP-date, Mastodon's ISO 8601), read against a fixed wall clock.
@Suite struct ResetTimeTests {
  /// 2026-12-01T15:00:00Z.
  let now = 1_796_137_200.0

  @Test(arguments: [
    ("1796137260", 60_000),  // epoch seconds (GitHub's x-ratelimit-reset)
    ("30", 30_000),  // delta seconds (Retry-After)
    (" 2 ", 2_000),
    ("1.25", 1_250),
    ("1796137200.5", 500),
    ("Tue, 01 Dec 2026 15:01:30 GMT", 90_000),  // IMF-fixdate
    ("2026-12-01T15:00:10Z", 10_000),  // RFC 3339
    ("2026-12-01T15:00:10.250Z", 10_250),  // Mastodon's X-RateLimit-Reset
    ("2026-12-01t15:00:10z", 10_000),
    ("2026-12-01 15:00:10Z", 10_000),
    ("2026-12-01T16:00:10+01:00", 10_000),
    ("2026-12-01T14:00:10-01:00", 10_000),
    ("2026-12-01T15:00:10-01:00", 3_610_000),
  ])
  func eachFormIsReadAsTheTimeLeft(value: String, milliseconds: Int64) {
    #expect(ResetTime.delay(value, now: now) == .milliseconds(milliseconds))
  }

  @Test(arguments: ["0", "1796137100", "Sun, 06 Nov 1994 08:49:37 GMT", "2020-01-01T00:00:00Z"])
  func aTimeAlreadyPastIsNoWait(value: String) {
    #expect(ResetTime.delay(value, now: now) == .zero)
  }

  @Test(arguments: [
    "", "soon", "-5", "1e3", "0x10", "1.", ".5", "1.2.3", "Tue, 01 Dec 2026 15:01:30 UTC",
    "Tue, 1 Dec 2026 15:01:30 GMT",
    "Tue, 01 Foo 2026 15:01:30 GMT", "2026-13-01T15:00:00Z", "2026-12-01T25:00:00Z", "2026-12-01T15:00:00",
    "2026-12-01T15:00:00+0100", "2026-12-01T15:00:00.Z", "2026-12-01",
  ])
  func anythingElseIsNoTime(value: String) {
    #expect(ResetTime.delay(value, now: now) == nil)
  }

  @Test func aWaitBeyondADayIsReadAsADay() {
    #expect(ResetTime.delay("2099-01-01T00:00:00Z", now: now) == ResetTime.longest)
    #expect(ResetTime.delay("999999999", now: now) == ResetTime.longest)
  }

  @Test func retryAfterTakesAnHTTPDateTooAndStaysWithinAnHour() {
    let dated = HTTPResponse(status: 503, headers: [("Retry-After", "Tue, 01 Dec 2026 15:00:42 GMT")])
    #expect(dated.retryAfter(now: now) == .seconds(42))
    let long = HTTPResponse(status: 429, headers: [("retry-after", "7200")])
    #expect(long.retryAfter(now: now) == .seconds(3600))
    #expect(HTTPResponse(status: 429).retryAfter(now: now) == nil)
  }

  @Test func theWallClockIsTheEpoch() {
    #expect(ResetTime.wallClockNow() > 1_700_000_000)
  }
}
