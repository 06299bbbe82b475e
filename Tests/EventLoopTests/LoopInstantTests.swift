import EventLoop
import Testing

@Suite struct LoopInstantTests {
  @Test func theTimeBetweenTwoInstantsHasASign() {
    let earlier = LoopInstant(nanoseconds: 5_000)
    let later = LoopInstant(nanoseconds: 8_500)
    #expect(later - earlier == .nanoseconds(3_500))
    #expect(earlier - later == .nanoseconds(-3_500))
    #expect(earlier + .nanoseconds(3_500) == later)
  }

  @Test func instantsBeyondTheClocksRangeStayAtItsEnd() {
    let last = LoopInstant(nanoseconds: .max)
    #expect(LoopInstant(nanoseconds: .max - 1) + .seconds(1) == last)
    #expect(last - LoopInstant(nanoseconds: 0) == .seconds(18_446_744_073) + .nanoseconds(709_551_615))
  }

  @Test func aDurationBelowZeroMovesNoInstantBack() {
    let now = LoopInstant(nanoseconds: 1_000)
    #expect(now + .nanoseconds(-500) == now)
  }

  /// `isWithin` answers as `later - earlier <= .milliseconds(limit)` does.
  @Test func isWithinAgreesWithDurations() {
    let instants: [UInt64] = [0, 1, 999_999, 1_000_000, 1_000_001, 5_000_000_000, .max - 1, .max]
    let limits: [UInt64] = [0, 1, 5_000, 18_446_744_073_709, 18_446_744_073_710, .max]
    for later in instants {
      for earlier in instants {
        for limit in limits {
          let (a, b) = (LoopInstant(nanoseconds: later), LoopInstant(nanoseconds: earlier))
          #expect(
            a.isWithin(milliseconds: limit, of: b) == (a - b <= .milliseconds(limit)), "\(later) \(earlier) \(limit)")
        }
      }
    }
  }
}
