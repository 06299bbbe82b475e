/// One endpoint's calls as `stats` shows them under `backend.http.endpoints`: what
/// `netmodel top` needs to show which endpoint is slow or busy now.
public struct EndpointFigures: Equatable, Sendable {
  /// Sent and not yet answered (or failed).
  public var inFlight = 0
  /// Answered or failed, since start.
  public var finished = 0
  /// The time the finished calls took, added up: a reader divides the change of this
  /// by the change of `finished` for the mean latency of an interval.
  public var latencyTotal: Duration = .zero
  /// The time the last finished call took.
  public var latencyLast: Duration = .zero

  public init() {}
}
