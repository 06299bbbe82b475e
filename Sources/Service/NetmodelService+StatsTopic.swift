import EventLoop
import JSON
import JSONRPC

/// The `stats` topic: the figures of `stats`, pushed as a `statsChanged` notification at most
/// once a second, only while someone subscribes and only when they changed, so that
/// `netmodel top` watches a server without polling it.
extension NetmodelService {
  struct StatsPush {
    var timer: EventLoop.TimerID?
    /// The last push's figures without those that every push changes by itself.
    var fingerprint: [UInt8] = []
  }

  static let statsInterval = Duration.seconds(1)

  /// A new subscription gets the figures now (after its reply, as a snapshot would
  /// be), then with the others at the ticks; the timer runs while any subscription is
  /// left.
  func statsSubscribed(_ subscription: SubscriptionHub.Subscription) {
    let (text, fingerprint) = statsPushText()
    subscriptions.publishFirst(stats: text, to: subscription, betweenTicks: statsPush.timer != nil)
    if statsPush.timer == nil {
      statsPush.fingerprint = fingerprint
      // Unowned (see `init`): `deinit` cancels the timer.
      statsPush.timer = loop.scheduleRepeating(after: Self.statsInterval) { [unowned self] in
        self.statsTick()
      }
    }
  }

  private func statsTick() -> Duration? {
    guard subscriptions.hasStatsSubscribers else {
      statsPush = StatsPush()
      return nil
    }
    let (text, fingerprint) = statsPushText()
    let changed = fingerprint != statsPush.fingerprint
    statsPush.fingerprint = fingerprint
    // Unchanged figures too go to a subscription that skipped the last change.
    subscriptions.publish(stats: text, changed: changed)
    return Self.statsInterval
  }

  private func statsPushText() -> (StatsText, [UInt8]) {
    let figures = statsResult()
    var fingerprint: [UInt8] = []
    figures.withoutDrift.encode(into: &fingerprint)
    return (StatsText(figures), fingerprint)
  }
}
