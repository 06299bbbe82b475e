import EventLoop

/// Why an `HTTPClient` holds its requests: the answer that said to wait, and the header
/// that said how long (`Retry-After`, a rate-limit reset header; nil: the rule's
/// `waitMs`).
public struct HoldReason: Sendable {
  public var status: Int
  public var header: String?
  /// The header's value as the API sent it.
  public var value: String?

  public init(status: Int, header: String?, value: String?) {
    self.status = status
    self.header = header
    self.value = value
  }
}

/// A request waiting in an `HTTPClient`'s queue, as `inspect` shows it.
public struct WaitingRequest: Sendable {
  /// `METHOD url` (`HTTPRequest.summary`: no header, no body).
  public var summary: String
  public var priority: HTTPPriority
  public var since: LoopInstant
}

extension HTTPClient {
  /// What keeps requests from going out now, as `inspect` shows it.
  public struct Holds: Sendable {
    /// Nothing goes out before it (`hold(until:)`); nil: no hold.
    public var heldUntil: LoopInstant?
    public var reason: HoldReason?
    public var inFlight: Int
    public var maxConnections: Int
    /// Requests waiting, and the first of them, oldest first.
    public var waiting: Int
    public var oldestWaiting: [WaitingRequest]
  }

  public func holds(limit: Int) -> Holds {
    Holds(
      heldUntil: holdRemaining == nil ? nil : heldUntil, reason: holdRemaining == nil ? nil : holdReason,
      inFlight: inFlight, maxConnections: maxConnections, waiting: waiting, oldestWaiting: waitingRequests(limit: limit)
    )
  }
}
