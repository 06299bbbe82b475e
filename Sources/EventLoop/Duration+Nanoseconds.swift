extension Duration {
  /// The loop's clocks count whole nanoseconds in a `UInt64`: a negative duration is
  /// none, and one too long for that (about 584 years) is the longest there is.
  public var clampedNanoseconds: UInt64 {
    guard self > .zero else { return 0 }
    let (seconds, attoseconds) = components
    let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return .max }
    let (total, carried) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
    return carried ? .max : total
  }

  /// Any count the clocks hold, however large (`.nanoseconds(_:)` traps beyond `Int64`).
  init(nanoseconds: UInt64) {
    self.init(
      secondsComponent: Int64(nanoseconds / 1_000_000_000),
      attosecondsComponent: Int64(nanoseconds % 1_000_000_000) * 1_000_000_000)
  }
}
