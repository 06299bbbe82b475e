import HTTP

/// A backend whose calls wait for a connection in a queue ordered by priority (the
/// REST backend's HTTP client). The preloader passes each item's level down and, while
/// a call still waits, moves it when the level changes or gives it up at `none`: the
/// priority is decided where the work waits.
public protocol PrioritisedBackend: AnyObject {
  /// The priority of follow-state reads made from now until it changes back (`.user`
  /// otherwise). The preloader sets it around the reads it asks the store for, which
  /// call the backend at once; a batched read goes out at the highest priority of the
  /// reads in it. Reads cannot be cancelled: the store waits for every read it started.
  var readPriority: HTTPPriority { get set }

  /// `fetchDetail` at `priority`; the answer says how to move or give up the call
  /// while it waits (nil when there is nothing to change: it failed at once).
  func fetchDetail(
    _ key: EntityKey, priority: HTTPPriority, completion: @escaping (Result<String, FollowFailure>) -> Void
  ) -> PendingCall?
}

/// A call that can be re-prioritised or given up until it goes out.
public struct PendingCall {
  /// True when the call had not gone out: nothing is sent, and its completion runs
  /// (on the loop) with a failure. False once it is on the wire: it finishes.
  public let cancel: () -> Bool
  public let setPriority: (HTTPPriority) -> Void

  public init(cancel: @escaping () -> Bool, setPriority: @escaping (HTTPPriority) -> Void) {
    self.cancel = cancel
    self.setPriority = setPriority
  }
}
