/// A moment on the loop's clock: monotonic nanoseconds since an arbitrary start.
public struct LoopInstant: Comparable, Hashable, Sendable {
  public let nanoseconds: UInt64

  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

  public static func < (a: LoopInstant, b: LoopInstant) -> Bool { a.nanoseconds < b.nanoseconds }

  /// An instant beyond the clock's range is one it never reaches: a wrapped sum would
  /// be in the past, and a timer set for it would fire at once.
  public static func + (instant: LoopInstant, duration: Duration) -> LoopInstant {
    let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(duration.clampedNanoseconds)
    return LoopInstant(nanoseconds: overflow ? .max : sum)
  }

  /// Whether at most `milliseconds` passed from `earlier` to this instant (always, when
  /// this one comes first). In integers, not `Duration`s (attoseconds in 128 bits): the
  /// test is on every cached read.
  public func isWithin(milliseconds: UInt64, of earlier: LoopInstant) -> Bool {
    guard nanoseconds > earlier.nanoseconds else { return true }
    let (limit, overflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
    return overflow || nanoseconds - earlier.nanoseconds <= limit
  }

  /// The time from `earlier` to `later`, negative when `later` comes first.
  public static func - (later: LoopInstant, earlier: LoopInstant) -> Duration {
    later >= earlier
      ? Duration(nanoseconds: later.nanoseconds - earlier.nanoseconds)
      : .zero - Duration(nanoseconds: earlier.nanoseconds - later.nanoseconds)
  }
}
