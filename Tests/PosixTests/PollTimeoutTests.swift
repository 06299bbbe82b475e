import Testing

@testable import Posix

@Suite struct PollTimeoutTests {
  /// Rounding down would wake the loop just before a timer's deadline, and it would
  /// wait again, for 0 ms, in a busy loop until the deadline.
  @Test func aWaitIsRoundedUpToWholeMilliseconds() {
    #expect(Duration.nanoseconds(1).pollTimeoutMilliseconds == 1)
    #expect(Duration.milliseconds(2).pollTimeoutMilliseconds == 2)
    #expect(Duration.nanoseconds(2_000_001).pollTimeoutMilliseconds == 3)
    #expect((Duration.seconds(1) + .microseconds(500)).pollTimeoutMilliseconds == 1_001)
  }

  @Test func aWaitBelowZeroIsNoneAndOneTooLongIsTheLongest() {
    #expect(Duration.zero.pollTimeoutMilliseconds == 0)
    #expect(Duration.milliseconds(-5).pollTimeoutMilliseconds == 0)
    #expect(Duration.seconds(Int64.max).pollTimeoutMilliseconds == Int32.max)
    #expect(Duration.seconds(3_000_000).pollTimeoutMilliseconds == Int32.max)
  }
}
