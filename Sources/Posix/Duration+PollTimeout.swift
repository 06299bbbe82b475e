extension Duration {
  /// The whole milliseconds `poll` and `epoll_wait` take, rounded up so that a wait
  /// never ends a little before its deadline: a negative duration is none, and one
  /// too long for an `Int32` is the longest there is. Parts of a nanosecond are
  /// dropped first, as the loop's clocks count whole nanoseconds.
  var pollTimeoutMilliseconds: Int32 {
    guard self > .zero else { return 0 }
    let (seconds, attoseconds) = components
    let (wholeMs, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    if overflow { return .max }
    let nanoseconds = attoseconds / 1_000_000_000
    return Int32(clamping: wholeMs + (nanoseconds + 999_999) / 1_000_000)
  }
}
