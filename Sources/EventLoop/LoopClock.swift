/// Where the loop reads the time; tests swap in a `ManualClock`.
public protocol LoopClock: AnyObject {
  /// Monotonic nanoseconds.
  var now: UInt64 { get }
}
