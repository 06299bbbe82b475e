/// Where the loop reads the time; tests swap in a `ManualClock`.
public protocol LoopClock: AnyObject {
  var now: LoopInstant { get }
}
