/// What a REST backend did, for `stats`: the session's HTTP client and the calls it
/// counted, with the single state reads the follows count on their own.
public final class RESTStatistics: BackendStatistics {
  let session: RESTSession
  let follows: RESTFollows

  init(session: RESTSession, follows: RESTFollows) {
    self.session = session
    self.follows = follows
  }

  /// Calls made per kind and endpoint (`artist.state`), for `stats` and tests.
  public var calls: [String: Int] {
    var calls = session.callsByEndpoint
    for (kind, read) in follows.stateReads where read.calls > 0 { calls["\(kind).state", default: 0] += read.calls }
    return calls
  }

  /// Every endpoint's figures by `kind.endpoint`: single state reads keep theirs on
  /// the kind's boxed read (RESTFollows.StateRead), the rest the session.
  var figuresByEndpoint: [String: EndpointFigures] {
    var all = session.figuresByEndpoint
    for (kind, read) in follows.stateReads where read.figures.finished > 0 || read.figures.inFlight > 0 {
      all["\(kind).state", default: EndpointFigures()].add(read.figures)
    }
    return all
  }

  public var httpStatistics: HTTPStatistics {
    HTTPStatistics(
      counters: session.http.counters, inFlight: session.http.inFlight, callsByEndpoint: calls,
      endpoints: figuresByEndpoint, libcurlOnItsThread: session.http.libcurlOnItsThread,
      libcurlMoves: session.http.libcurlMoves)
  }

  /// The API's rate-limit hold and the calls waiting, for `inspect`.
  public func holds(limit: Int) -> ModelInspection.Holds {
    ModelInspection.Holds(
      api: session.configuration.baseURL(of: session.environment) ?? "", environment: session.environment,
      queue: session.http.holds(limit: limit))
  }
}
