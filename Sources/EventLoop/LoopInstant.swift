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

  /// The time from `earlier` to `later`, negative when `later` comes first.
  public static func - (later: LoopInstant, earlier: LoopInstant) -> Duration {
    later >= earlier
      ? Duration(nanoseconds: later.nanoseconds - earlier.nanoseconds)
      : .zero - Duration(nanoseconds: earlier.nanoseconds - later.nanoseconds)
  }
}
