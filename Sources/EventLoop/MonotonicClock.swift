import Posix

public final class MonotonicClock: LoopClock {
  public init() {}
  public var now: UInt64 { Process.monotonicNanoseconds() }
}
