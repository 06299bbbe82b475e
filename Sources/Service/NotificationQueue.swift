import JSON
import JSONRPC
import NetworkModels

/// One connection's notifications waiting to be written, newest state per
/// (subscription, entity), oldest first.
final class NotificationQueue {
  enum Subject: Hashable {
    case entity(EntityKey)
    case list(ListKey)
    case stats
    /// A ledger entry, by its `seq`.
    case mutation(UInt64)
  }

  struct Slot: Hashable {
    let subscription: String
    let subject: Subject
  }

  enum Pending {
    case entity(EntityState)
    /// Encoded when written, from the list store.
    case list(ListKey)
    /// The server's figures, encoded once per push for every subscriber.
    case stats(StatsText)
    case mutation(MutationEntry)
  }

  /// Notifications are written while the connection has less than this unsent.
  static let highWater = 64 << 10

  unowned let connection: Connection
  var subscriptions: [String: SubscriptionHub.Subscription] = [:]
  private var order: [Slot] = []
  private var head = 0
  /// Per subscription, so that dropping one's costs O(what it has queued).
  private var states: [String: [Subject: Pending]] = [:]
  private(set) var queuedCount = 0
  private var seq: UInt64 = 0
  private let listState: (ListKey) -> ListState?
  /// The version of the run's newest change (`VersionBase.newest`).
  private let newestVersion: () -> UInt64

  init(
    connection: Connection, listState: @escaping (ListKey) -> ListState?,
    newestVersion: @escaping () -> UInt64
  ) {
    self.connection = connection
    self.listState = listState
    self.newestVersion = newestVersion
  }

  var hasQueued: Bool { queuedCount > 0 }
  /// Run once nothing is queued (`afterQueued`).
  private var whenEmpty: [() -> Void] = []

  /// Runs `body` once everything queued has been written (now, when nothing is): a
  /// reply that must come after the notifications a slow reader has not taken yet.
  func afterQueued(_ body: @escaping () -> Void) {
    if hasQueued { whenEmpty.append(body) } else { body() }
  }

  /// Queues `state`; true when it replaced an older state that was still waiting.
  func put(_ state: EntityState, for subscription: String) -> Bool {
    put(.entity(state), as: Slot(subscription: subscription, subject: .entity(state.key)))
  }

  /// Queues a list's change; true when one was already waiting (it will carry the
  /// newest state anyway).
  func put(list: ListKey, for subscription: String) -> Bool {
    put(.list(list), as: Slot(subscription: subscription, subject: .list(list)))
  }

  private func put(_ pending: Pending, as slot: Slot) -> Bool {
    if states[slot.subscription, default: [:]].updateValue(pending, forKey: slot.subject) != nil { return true }
    queuedCount += 1
    order.append(slot)
    return false
  }

  /// Queues the server's figures; true when older ones were still waiting (a slow
  /// reader gets the latest only).
  func put(stats: StatsText, for subscription: String) -> Bool {
    put(.stats(stats), as: Slot(subscription: subscription, subject: .stats))
  }

  /// Queues a ledger entry's outcome; true when an older outcome of it still waited.
  func put(mutation entry: MutationEntry, for subscription: String) -> Bool {
    put(.mutation(entry), as: Slot(subscription: subscription, subject: .mutation(entry.seq)))
  }

  /// Forgets what `subscription` has queued; its places in `order` are skipped later.
  func dropQueued(subscription: String) {
    queuedCount -= states.removeValue(forKey: subscription)?.count ?? 0
    runIfEmpty()
  }

  private func runIfEmpty() {
    guard !hasQueued && !whenEmpty.isEmpty else { return }
    let bodies = whenEmpty
    whenEmpty = []
    for body in bodies { body() }
  }

  private func take(_ slot: Slot) -> Pending? {
    guard let pending = states[slot.subscription]?.removeValue(forKey: slot.subject) else { return nil }
    queuedCount -= 1
    if states[slot.subscription]?.isEmpty == true { states.removeValue(forKey: slot.subscription) }
    return pending
  }

  /// Writes queued notifications until the connection holds `highWater` unsent bytes;
  /// returns how many `stateChanged` and `statsChanged` notifications were written.
  ///
  /// They go ahead of the replies of this turn (see `Connection.sendNotification`),
  /// except those of a subscription made in this turn, which follow its reply; `seq`
  /// follows the order on the wire.
  func drain() -> (stateChanged: Int, stats: Int) {
    var written = 0
    var stats = 0
    var afterReplies: [(Slot, Pending)] = []
    while head < order.count && connection.unsentByteCount < NotificationQueue.highWater && !connection.isClosed {
      let slot = order[head]
      head += 1
      guard let pending = take(slot) else { continue }
      if subscriptions[slot.subscription]?.isFresh == true {
        afterReplies.append((slot, pending))
        continue
      }
      if write(slot, pending, aheadOfReplies: true, last: !hasQueued && afterReplies.isEmpty) {
        written += 1
      } else {
        stats += 1
      }
    }
    for (index, (slot, pending)) in afterReplies.enumerated() {
      if write(slot, pending, aheadOfReplies: false, last: !hasQueued && index == afterReplies.count - 1) {
        written += 1
      } else {
        stats += 1
      }
    }
    if head == order.count || head > 1024 {
      order.removeFirst(head)
      head = 0
    }
    runIfEmpty()
    return (written, stats)
  }

  /// False when it wrote a `statsChanged` notification. `last`: nothing else waits
  /// for the connection, so every change so far of what it subscribed to is on the
  /// wire with this one, which says so (`through`, where a resumed `subscribe` goes on).
  private func write(_ slot: Slot, _ pending: Pending, aheadOfReplies: Bool, last: Bool) -> Bool {
    seq += 1
    let notification: ChangeNotification
    let through = last ? newestVersion() : nil
    switch pending {
    case .entity(let state):
      notification = ChangeNotification(
        subscription: slot.subscription, seq: seq, change: .entity(state), through: through)
    case .list(let key):
      notification = ChangeNotification(
        subscription: slot.subscription, seq: seq, change: .list(listState(key)), through: through)
    case .stats(let text):
      notification = ChangeNotification(subscription: slot.subscription, seq: seq, change: .stats(text))
    case .mutation(let entry):
      notification = ChangeNotification(subscription: slot.subscription, seq: seq, change: .mutation(entry))
    }
    if aheadOfReplies {
      connection.sendNotification(encodeBody: notification.encode)
    } else {
      connection.send(encodeBody: notification.encode)
    }
    return !notification.isStats
  }
}

/// The params of a `stateChanged`, `statsChanged` or `mutationOutcome` notification, as
/// schema/openrpc.json gives them, and the notification they make.
struct ChangeNotification {
  enum Change {
    case entity(EntityState)
    /// nil: the list is no longer in memory.
    case list(ListState?)
    case stats(StatsText)
    case mutation(MutationEntry)
  }

  let subscription: String
  /// Follows the order on the connection's wire.
  let seq: UInt64
  let change: Change
  /// Every change up to this version of the connection's subscriptions has been written.
  var through: UInt64? = nil

  var isStats: Bool {
    if case .stats = change { true } else { false }
  }

  /// The whole notification, its envelope with these params.
  func encode(into buffer: inout [UInt8]) {
    let text: MessageEncoder.Notification
    switch change {
    case .stats: text = NotificationText.stats
    case .mutation: text = NotificationText.mutationOutcome
    case .entity, .list: text = NotificationText.stateChanged
    }
    text.encode(into: &buffer) { buffer in
      buffer.append(contentsOf: NotificationText.subscription)
      appendJSONString(subscription, to: &buffer)
      buffer.append(contentsOf: NotificationText.seq)
      appendDecimal(Int64(seq), to: &buffer)
      switch change {
      case .entity(let state):
        buffer.append(contentsOf: NotificationText.state)
        state.encode(into: &buffer)
      case .list(let state):
        buffer.append(contentsOf: NotificationText.state)
        if let state { state.encode(into: &buffer) } else { appendLiteral("null", to: &buffer) }
      case .stats(let text):
        buffer.append(contentsOf: NotificationText.statsField)
        buffer.append(contentsOf: text.bytes)
      case .mutation(let entry):
        buffer.append(contentsOf: NotificationText.entry)
        entry.encode(into: &buffer)
      }
      if let through {
        buffer.append(contentsOf: NotificationText.through)
        appendDecimal(Int64(through), to: &buffer)
      }
      buffer.append(UInt8(ascii: "}"))
    }
  }
}

private enum NotificationText {
  static let stateChanged = MessageEncoder.Notification(method: "stateChanged")
  static let subscription = Array(#"{"subscription":"#.utf8)
  static let seq = Array(#","seq":"#.utf8)
  static let state = Array(#","state":"#.utf8)
  static let stats = MessageEncoder.Notification(method: "statsChanged")
  static let statsField = Array(#","stats":"#.utf8)
  static let mutationOutcome = MessageEncoder.Notification(method: "mutationOutcome")
  static let entry = Array(#","entry":"#.utf8)
  static let through = Array(#","through":"#.utf8)
}

/// One push of the `Stats` object, encoded once for the queues of every subscriber.
final class StatsText {
  let bytes: [UInt8]

  init(_ figures: StatsFigures) {
    var bytes: [UInt8] = []
    figures.encode(into: &bytes)
    self.bytes = bytes
  }
}
