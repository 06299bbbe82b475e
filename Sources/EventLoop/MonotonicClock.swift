import Posix

public final class MonotonicClock: LoopClock {
  public init() {}
  public var now: LoopInstant { LoopInstant(nanoseconds: Process.monotonicNanoseconds()) }
}
