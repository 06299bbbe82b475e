import Glibc

extension Process {
  /// Seconds since 1970-01-01T00:00:00Z: the wall clock, for values an API wants as a
  /// date (never for timing, which uses the monotonic clock).
  public static func secondsSinceEpoch() -> Int64 { Int64(Glibc.time(nil)) }
}
