import Posix

/// A peer can send a failing notification in a loop at no cost to itself, and nobody is
/// answered, so each failure is a warning in the log: per connection, the first
/// `linesPerMinute` of each minute are written and the rest counted, then told in one
/// line when the minute is over (at the next failure) or the connection closes.
struct LogBudget {
  static let linesPerMinute = 10
  static let minute: UInt64 = 60_000_000_000
  private var windowStart: UInt64?
  private var written = 0
  private(set) var suppressed = 0

  /// Whether the line of a failure at `now` is written, and how many of an earlier
  /// minute went unwritten (to be told first).
  mutating func admit(now: UInt64) -> (write: Bool, suppressedBefore: Int) {
    var before = 0
    if let start = windowStart, now &- start < Self.minute {
      if written >= Self.linesPerMinute {
        suppressed += 1
        return (false, 0)
      }
    } else {
      before = suppressed
      (windowStart, written, suppressed) = (now, 0, 0)
    }
    written += 1
    return (true, before)
  }

  /// The failures not yet told, now counted as told.
  mutating func takeSuppressed() -> Int {
    defer { suppressed = 0 }
    return suppressed
  }
}
