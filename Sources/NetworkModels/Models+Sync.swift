import EventLoop

/// `sync`: "my write is visible". Waits for every intent accepted before it to settle
/// (Watchman's `flush-subscriptions`, Replicache's `await push()`), and says how each
/// ended, or why it still waits.
extension Models {
  public struct SyncReport {
    public enum Outcome: String, Sendable {
      /// The backend did it.
      case confirmed
      /// The backend holds a follow request awaiting approval.
      case requested
      /// The backend refused it (a 4xx): shown as it last confirmed.
      case refused
      /// Given up on (retries spent, a wait beyond the budget, another environment):
      /// shown as it last confirmed.
      case rolledBack
    }

    public enum Wait: String, Sendable {
      /// Nothing is sent until `configure` gives credentials.
      case credentials
      /// The API's rate limit holds every request, past the timeout.
      case rateLimit
      /// Under way (sent, or to be retried) when the timeout came.
      case timeout
    }

    public var settled: [(state: EntityState, outcome: Outcome, error: FollowFailure?)] = []
    public var waiting: [(state: EntityState, reason: Wait, error: FollowFailure?)] = []
  }

  /// Answers `reply` once every intent pending now has settled, waits for
  /// credentials, or `timeout` passed (what is left then is listed as waiting).
  public func sync(timeout: Duration, reply: @escaping (SyncReport) -> Void) {
    let keys = store.keysWithPendingIntents
    guard !keys.isEmpty else { return reply(SyncReport()) }
    let waiter = SyncWaiter(keys: keys, reply: reply)
    // A rate limit that outlasts the timeout: an intent waiting to be sent again cannot
    // settle before it, so it is listed at once rather than at the timeout.
    let heldUntil = store.capabilities.statistics?.holds(limit: 0).queue.heldUntil
    if let heldUntil, heldUntil > store.loop.clock.now + timeout {
      for key in keys where store.isWaitingToRetry(key) {
        waiter.unsettled.remove(key)
        waiter.report.waiting.append((store.state(key), .rateLimit, nil))
      }
      if waiter.unsettled.isEmpty { return waiter.finish(loop: store.loop) }
    }
    // The timer holds the waiter until it answers (`finish` cancels the timer).
    waiter.timer = store.loop.schedule(after: timeout) { [weak self] in
      guard let self else { return }
      waiter.timer = nil
      let held = self.store.capabilities.statistics?.holds(limit: 0).queue.heldUntil != nil
      for key in waiter.unsettled {
        waiter.report.waiting.append((self.store.state(key), held ? .rateLimit : .timeout, nil))
      }
      waiter.finish(loop: self.store.loop)
    }
    for key in keys {
      store.whenSettled(key) { [weak waiter, unowned store] result in
        guard let waiter, waiter.unsettled.contains(key) else { return }
        waiter.unsettled.remove(key)
        switch result {
        case .success(let state):
          waiter.report.settled.append((state, state.requested ? .requested : .confirmed, nil))
        case .failure(let settled):
          if case .unauthorized = settled.failure.kind, settled.state.pending {
            waiter.report.waiting.append((settled.state, .credentials, settled.failure))
          } else if case .rejected = settled.failure.kind {
            waiter.report.settled.append((settled.state, .refused, settled.failure))
          } else {
            waiter.report.settled.append((settled.state, .rolledBack, settled.failure))
          }
        }
        if waiter.unsettled.isEmpty { waiter.finish(loop: store.loop) }
      }
    }
  }
}

/// One `sync` under way: the intents it still waits for, and what it will answer.
private final class SyncWaiter {
  var unsettled: Set<EntityKey>
  var report = Models.SyncReport()
  var timer: EventLoop.TimerID?
  private var reply: ((Models.SyncReport) -> Void)?

  init(keys: [EntityKey], reply: @escaping (Models.SyncReport) -> Void) {
    unsettled = Set(keys)
    self.reply = reply
  }

  func finish(loop: EventLoop) {
    guard let reply else { return }
    self.reply = nil
    unsettled.removeAll()
    if let timer { loop.cancel(timer) }
    timer = nil
    reply(report)
  }
}
