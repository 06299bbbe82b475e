import Testing

@testable import Service

/// `inspect`'s wall-clock times, against dates worked out by hand (and by `date -u`).
struct WallClockTextTests {
  @Test(arguments: [
    (Int64(0), "1970-01-01T00:00:00.000Z"),
    (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
    (Int64(1_796_223_844_000), "2026-12-02T15:04:04.000Z"),
    (Int64(4_102_444_799_999), "2099-12-31T23:59:59.999Z"),
    (Int64(-1), "1969-12-31T23:59:59.999Z"),
  ])
  func iso8601(milliseconds: Int64, expected: String) {
    #expect(WallClockText.iso8601(millisecondsSince1970: milliseconds) == expected)
  }
}
