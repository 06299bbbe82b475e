/// A clock that moves only when told to, so timer tests never sleep.
public final class ManualClock: LoopClock {
  public private(set) var now: UInt64

  public init(start: UInt64 = 1_000_000_000) { now = start }

  public func advance(byMilliseconds ms: UInt64) { now += ms * 1_000_000 }
}
