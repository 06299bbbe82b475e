extension Duration {
  /// Whole milliseconds, rounded up, for the calls that count in them (`poll`,
  /// `epoll_wait`, libcurl's timeouts): rounded down, a wait would end a little before
  /// its deadline, and a short timeout would become 0, which is none at all. A negative
  /// duration is 0 and one too long is `Int64.max`; parts of a nanosecond are dropped
  /// first, as the loop's clocks count whole nanoseconds.
  public var roundedUpMilliseconds: Int64 {
    guard self > .zero else { return 0 }
    let (seconds, attoseconds) = components
    let (wholeMs, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    let nanoseconds = attoseconds / 1_000_000_000
    let (total, carried) = wholeMs.addingReportingOverflow((nanoseconds + 999_999) / 1_000_000)
    return overflow || carried ? .max : total
  }
}
