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
}
