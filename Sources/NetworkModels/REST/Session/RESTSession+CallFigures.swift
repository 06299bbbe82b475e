import EventLoop

/// Calls in flight and their latency per `kind.endpoint`, for `stats` (and
/// `netmodel top`). Every `send` follows the `count` of its endpoint in the same
/// call, so `send` takes the endpoint from there rather than every caller passing
/// its name again.
extension RESTSession {
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
    endpointFigures[key, default: EndpointFigures()].finish(took: took)
  }

  /// The figures of every endpoint but single state reads (RESTFollows.StateRead keeps
  /// those), by `kind.endpoint`.
  var figuresByEndpoint: [String: EndpointFigures] {
    Dictionary(uniqueKeysWithValues: endpointFigures.map { ("\($0.key.kind).\($0.key.endpoint)", $0.value) })
  }

  /// Calls made per `kind.endpoint`, but single state reads.
  var callsByEndpoint: [String: Int] {
    Dictionary(uniqueKeysWithValues: callCounts.map { ("\($0.key.kind).\($0.key.endpoint)", $0.value) })
  }
}

extension EndpointFigures {
  mutating func finish(took: Duration) {
    inFlight -= 1
    finished += 1
    latencyTotal += took
    latencyLast = took
  }

  /// Another part of the same endpoint's calls (its single and batched reads).
  mutating func add(_ other: EndpointFigures) {
    inFlight += other.inFlight
    finished += other.finished
    latencyTotal += other.latencyTotal
    if other.finished > 0 { latencyLast = other.latencyLast }
  }
}
