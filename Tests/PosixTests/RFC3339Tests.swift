import Testing

@testable import Posix

/// The one RFC 3339 writer (log stamps, `inspect`, a REST `{now}`), against dates worked out
/// by hand (and by `date -u`).
struct RFC3339Tests {
  @Test(arguments: [
    (Int64(0), "1970-01-01T00:00:00.000Z"),
    (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
    (Int64(1_796_223_844_000), "2026-12-02T15:04:04.000Z"),
    (Int64(4_102_444_799_999), "2099-12-31T23:59:59.999Z"),
    (Int64(-1), "1969-12-31T23:59:59.999Z"),
  ])
  func milliseconds(milliseconds: Int64, expected: String) {
    #expect(RFC3339.milliseconds(since1970: milliseconds) == expected)
  }

  @Test(arguments: [
    (Int64(0), "1970-01-01T00:00:00Z"), (1_796_137_445, "2026-12-01T15:04:05Z"), (951_782_400, "2000-02-29T00:00:00Z"),
    (-1, "1969-12-31T23:59:59Z"),
  ])
  func wholeSeconds(seconds: Int64, text: String) {
    #expect(RFC3339.seconds(since1970: seconds) == text)
  }
}
