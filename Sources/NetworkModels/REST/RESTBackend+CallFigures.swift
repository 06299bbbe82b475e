import EventLoop

/// Calls in flight and their latency per `kind.endpoint`, for `stats` (and
/// `netmodel top`). Every `send` follows the `count` of its endpoint in the same
/// call, so `send` takes the endpoint from there rather than every caller passing
/// its name again.
extension RESTBackend {
  struct StartedCall {
    let key: CallKey?
    let at: LoopInstant
  }

  func startCall() -> StartedCall {
    let key = lastCounted
    lastCounted = nil
    if let key { endpointFigures[key, default: EndpointFigures()].inFlight += 1 }
    return StartedCall(key: key, at: loop.clock.now)
  }

  /// The HTTP client completes every request once (a cancelled one too), so
  /// `inFlight` comes back down for each.
  func finishCall(_ call: StartedCall) {
    guard let key = call.key else { return }
    let took = loop.clock.now - call.at
    // One lookup: this runs for every call, on the path bench/ measures.
    Self.finish(&endpointFigures[key, default: EndpointFigures()], took)
  }

  private static func finish(_ figures: inout EndpointFigures, _ took: Duration) {
    figures.inFlight -= 1
    figures.finished += 1
    figures.latencyTotal += took
    figures.latencyLast = took
  }
}
