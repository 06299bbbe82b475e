/// A clock that moves only when told to, so timer tests never sleep.
public final class ManualClock: LoopClock {
  public private(set) var now: LoopInstant

  public init(start: LoopInstant = LoopInstant(nanoseconds: 1_000_000_000)) { now = start }

  public func advance(by duration: Duration) { now = now + duration }
}
