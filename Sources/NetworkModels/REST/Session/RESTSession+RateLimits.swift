import EventLoop
import HTTP

/// An API that says "no more requests until T" (429, or a status meaning "retry")
/// gets none: every request of this backend, whatever its kind or endpoint, waits in
/// the HTTP client's queue until T instead of being sent and refused again.
extension RESTSession {
  /// Sends `request` of `endpoint`; a rate-limited answer holds every request until
  /// the time it states, before the next waiting one goes out and `completion` reads it.
  @discardableResult
  func send(
    _ request: HTTPRequest, _ endpoint: RESTConfiguration.Endpoint, priority: HTTPPriority = .user,
    completion: @escaping (Result<HTTPResponse, HTTPError>) -> Void
  ) -> HTTPTicket {
    let call = startCall()
    let world = self.world
    return http.send(request, priority: priority, screen: rateLimitScreen(endpoint)) { [weak self] result in
      guard let self else { return completion(result) }
      // Withdrawn with the old world, or given up in a rate limit it could not wait out:
      // the API never saw it (`calls` counts what it saw). A detail withdrawn in this
      // world was uncounted by whoever withdrew it.
      if (self.world != world && result.wasWithdrawn) || result.wasHeldTooLong, let key = call.key {
        self.count(key.kind, key.endpoint, -1)
      }
      self.finishCall(call)
      completion(result)
    }
  }

  /// The HTTP client's screen for an answer of `endpoint`: a rate limit holds every
  /// request before another goes out. One of the old world's account or environment
  /// says nothing of this one.
  func rateLimitScreen(_ endpoint: RESTConfiguration.Endpoint) -> (Result<HTTPResponse, HTTPError>) -> Void {
    let world = self.world
    return { [weak self] result in
      guard let self, self.world == world else { return }
      self.holdIfRateLimited(result, endpoint)
    }
  }

  func holdIfRateLimited(_ result: Result<HTTPResponse, HTTPError>, _ endpoint: RESTConfiguration.Endpoint) {
    if case .success(let response) = result, let (wait, reason) = rateLimitWait(response, endpoint) {
      http.hold(until: loop.clock.now + wait, reason: reason)
    }
  }

  /// How long `response` says to wait, when it is a rate limit: the later of its
  /// `Retry-After` and its reset header (`rateLimit.resetHeader`, when the
  /// `remainingHeader` says 0, if one is named). Nil when it is no
  /// rate limit or names no time and its rule no `waitMs` (the retry policy's backoff
  /// applies then). The reason names the header the wait was read from.
  func rateLimitWait(_ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint) -> (
    Duration, HoldReason
  )? {
    let rule = endpoint.rule(for: response)
    let meaning = rule?.meaning ?? endpoint.statusMeanings[response.status]
    guard response.status == 429 || meaning == .retry else { return nil }
    let now = wallClock()
    let headers = configuration.rateLimit
    let spent = headers.remainingHeader.map { response.header($0).flatMap { Int($0) } == 0 } ?? true
    let resetValue = headers.resetHeader.flatMap { spent ? response.header($0) : nil }
    let reset = resetValue.flatMap { ResetTime.delay($0, now: now) }
    let retryAfterValue = response.header("Retry-After")
    let retryAfter = retryAfterValue.flatMap { ResetTime.delay($0, now: now) }
    func reason(_ header: String?, _ value: String?) -> HoldReason {
      HoldReason(status: response.status, header: header, value: value)
    }
    switch (reset, retryAfter) {
    case (let a?, let b?):
      return a >= b ? (a, reason(headers.resetHeader, resetValue)) : (b, reason("Retry-After", retryAfterValue))
    case (let a?, nil): return a > .zero ? (a, reason(headers.resetHeader, resetValue)) : nil
    case (nil, let b?): return b > .zero ? (b, reason("Retry-After", retryAfterValue)) : nil
    case (nil, nil): return rule?.waitMs.map { (.milliseconds($0), reason(nil, nil)) }
    }
  }

  /// `outcome`, where a transient failure says how long requests still wait for a
  /// rate limit: the store retries then, not before.
  func answer<T>(
    _ result: Result<HTTPResponse, HTTPError>, _ endpoint: RESTConfiguration.Endpoint,
    meaning: ((RESTConfiguration.StatusMeaning) -> Result<T, FollowFailure>)? = nil,
    success: (HTTPResponse) -> Result<T, FollowFailure>
  ) -> Result<T, FollowFailure> {
    let outcome = Self.outcome(
      result, endpoint, forbidden: configuration.forbidden, meaning: meaning, success: success)
    guard case .failure(var failure) = outcome, failure.isRetryable, let left = http.holdRemaining else {
      return outcome
    }
    failure.retryAfter = max(failure.retryAfter ?? .zero, left)
    return .failure(failure)
  }

  /// A mutation, or a read a caller waits for, that would wait for a rate limit longer
  /// than its kind's retry policy allows (`retry.maxWaitMs`; a list's: the top-level
  /// one, `kind` nil) fails at once, saying how long is left, rather than hold its
  /// caller that long; a shorter wait is spent in the queue. A mutation whose policy
  /// allows no retry fails too: sent, it would get the 429 and be rolled back, so a
  /// hold learned first (from a read) answers the same, not an hour later.
  /// How long a request of `kind` may wait in the HTTP queue for a hold that starts
  /// after it was sent (`HTTPRequest.maxHoldWait`): the budget `heldBeyondBudget`
  /// checks before it is sent, so a follow queued behind the answer that brings a long
  /// rate limit fails at once too, not when the limit ends.
  func maxHoldWait(kind: String?, mutation: Bool = false) -> Duration {
    let policy = kind.flatMap { configuration.kinds[$0]?.retry } ?? configuration.retry
    if mutation, policy.maxRetries == 0, policy.whenExhausted == .rollBack { return .zero }
    return .milliseconds(policy.maxWaitMs)
  }

  func heldBeyondBudget(kind: String?, mutation: Bool = false) -> FollowFailure? {
    guard let left = http.holdRemaining else { return nil }
    let policy = kind.flatMap { configuration.kinds[$0]?.retry } ?? configuration.retry
    let seconds = (left / .milliseconds(1)).rounded(.up) / 1000
    if left > .milliseconds(policy.maxWaitMs) {
      return FollowFailure(
        .unavailable, "rate limited by the API for another \(seconds) s: not sent (longer than retry.maxWaitMs)",
        retryAfter: left)
    }
    guard mutation, policy.maxRetries == 0, policy.whenExhausted == .rollBack else { return nil }
    return FollowFailure(
      .unavailable, "rate limited by the API for another \(seconds) s: not sent (retry.maxRetries is 0)",
      retryAfter: left)
  }
}
