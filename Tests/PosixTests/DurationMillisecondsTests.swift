import Posix
import Testing

@Suite struct DurationMillisecondsTests {
  /// Rounded down, the loop would wake just before a timer's deadline and wait again,
  /// for 0 ms, in a busy loop until the deadline; and a 0.5 ms HTTP timeout would be
  /// none.
  @Test func durationsAreRoundedUpToWholeMilliseconds() {
    #expect(Duration.nanoseconds(1).roundedUpMilliseconds == 1)
    #expect(Duration.milliseconds(2).roundedUpMilliseconds == 2)
    #expect(Duration.nanoseconds(2_000_001).roundedUpMilliseconds == 3)
    #expect((Duration.seconds(1) + .microseconds(500)).roundedUpMilliseconds == 1_001)
  }

  @Test func belowZeroIsZeroAndTooLongIsTheLongest() {
    #expect(Duration.zero.roundedUpMilliseconds == 0)
    #expect(Duration.milliseconds(-5).roundedUpMilliseconds == 0)
    #expect(Duration.seconds(Int64.max).roundedUpMilliseconds == Int64.max)
    #expect(Duration.seconds(Int64.max / 1000).roundedUpMilliseconds == Int64.max / 1000 * 1000)
  }
}
