import JSON
import JSONRPC
import NetworkModels
import Posix

/// Who wants to hear about which entities, and the per-connection queues that carry
/// the news. Notifications carry whole states, so a queue keeps only the newest state
/// per (subscription, entity): a connection that reads slowly costs memory bounded by
/// its topics, never by the number of changes, and never slows anyone else.
///
/// Must be used on the loop's thread.
final class SubscriptionHub {
  enum Topic {
    /// kind nil: every entity; id nil: every entity of the kind.
    case entity(kind: String?, id: String?)
    /// One list (name and params).
    case list(ListKey, params: [String: String])
    /// The server's own figures (`stats`), pushed at most once a second.
    case stats
    /// The ledger's outcomes (`mutationOutcome`), one notification each.
    case mutations
  }

  final class Subscription {
    let id: String
    let topics: [Topic]
    unowned let queue: NotificationQueue
    /// Made in this loop turn: the peer learns its name from the `subscribe` reply, so
    /// its notifications must come after that reply, not ahead of it.
    var isFresh = true
    /// Its first `statsChanged` came between two ticks, less than a second before the
    /// next: it skips that one, so that it hears at most once a second.
    var statsSkipsATick = false
    /// A change it skipped, for the tick after.
    var statsOwed = false

    init(id: String, topics: [Topic], queue: NotificationQueue) {
      self.id = id
      self.topics = topics
      self.queue = queue
    }
  }

  struct Counters {
    var notificationsSent = 0
    var coalesced = 0
    var statsSent = 0
  }

  private(set) var counters = Counters()
  private var nextID = 1
  private var exact: [EntityKey: Subscribers] = [:]
  private var byKind: [String: Subscribers] = [:]
  private var everything = Subscribers()
  private var lists: [ListKey: Subscribers] = [:]
  private var statsSubscribers = Subscribers()
  private var mutationSubscribers = Subscribers()
  private var queues: [Int: NotificationQueue] = [:]
  private var fresh: [Subscription] = []
  /// A list's current ListState: a list's is taken when its notification is written,
  /// so a waiting one always carries the newest state.
  var listState: (ListKey) -> ListState? = { _ in nil }
  /// The version of the run's newest change: what a notification that leaves nothing
  /// queued says the connection has seen (`through`).
  var newestVersion: () -> UInt64 = { 0 }

  var subscriptionCount: Int { queues.values.reduce(0) { $0 + $1.subscriptions.count } }

  /// Registers `topics` for `connection` and returns the subscription's name.
  func subscribe(_ topics: [Topic], on connection: Connection) -> Subscription {
    let queue = self.queue(for: connection)
    let subscription = Subscription(id: "s\(nextID)", topics: topics, queue: queue)
    nextID += 1
    fresh.append(subscription)
    queue.subscriptions[subscription.id] = subscription
    for topic in topics {
      switch topic {
      case .entity(let kind?, let id?):
        exact[EntityKey(kind: kind, id: id), default: Subscribers()].insert(subscription)
      case .entity(let kind?, nil): byKind[kind, default: Subscribers()].insert(subscription)
      case .entity(nil, _): everything.insert(subscription)
      case .list(let key, _): lists[key, default: Subscribers()].insert(subscription)
      case .stats: statsSubscribers.insert(subscription)
      case .mutations: mutationSubscribers.insert(subscription)
      }
    }
    return subscription
  }

  func hasSubscribers(_ list: ListKey) -> Bool { lists[list] != nil }

  /// Whether a subscription names `entity` by its exact topic (wildcards hold nothing).
  func isSubscribed(_ entity: EntityKey) -> Bool { exact[entity] != nil }

  /// Tells every subscription to `list` that it changed.
  func publish(list: ListKey) {
    lists[list]?.forEach { subscription in
      if subscription.queue.put(list: list, for: subscription.id) { counters.coalesced += 1 }
    }
  }

  /// False when the connection has no subscription of that name.
  func unsubscribe(_ id: String, on connection: Connection) -> Bool {
    guard let queue = queues[connection.id], let subscription = queue.subscriptions.removeValue(forKey: id) else {
      return false
    }
    remove(subscription)
    queue.dropQueued(subscription: id)
    shrink()
    return true
  }

  func connectionClosed(_ connection: Connection) {
    guard let queue = queues.removeValue(forKey: connection.id) else { return }
    for subscription in queue.subscriptions.values { remove(subscription) }
    queue.subscriptions.removeAll()
    shrink()
  }

  /// The topic tables' capacities, for tests.
  var tableCapacities: (exact: Int, byKind: Int, lists: Int) { (exact.capacity, byKind.capacity, lists.capacity) }

  /// Dictionaries keep their capacity when emptied: after subscriptions to many
  /// topics end (100 peers with 1,000 entities each closing), give the memory back,
  /// as the store does after an eviction.
  private func shrink() {
    var trimmed = exact.shrinkIfMostlyEmpty()
    trimmed = byKind.shrinkIfMostlyEmpty() || trimmed
    trimmed = lists.shrinkIfMostlyEmpty() || trimmed
    if trimmed { Memory.trim() }
  }

  /// Tells every `mutations` subscription of an entry's new outcome. Queued by entry:
  /// two outcomes of one entry in one turn (waiting, then confirmed) send the later.
  func publish(mutation entry: MutationEntry) {
    mutationSubscribers.forEach { subscription in
      if subscription.queue.put(mutation: entry, for: subscription.id) { counters.coalesced += 1 }
    }
  }

  /// Tells every matching subscription, once each, about `state`.
  func publish(_ state: EntityState) {
    var delivered: Set<ObjectIdentifier> = []
    func deliver(_ subscriptions: Subscribers?) {
      subscriptions?.forEach { subscription in
        guard delivered.insert(ObjectIdentifier(subscription)).inserted else { return }
        if subscription.queue.put(state, for: subscription.id) { counters.coalesced += 1 }
      }
    }
    deliver(exact[state.key])
    deliver(byKind[state.key.kind])
    deliver(everything)
  }

  /// Writes queued notifications of every connection that has room; runs once per
  /// loop turn, just before the connections are flushed.
  func drainAll() {
    for queue in queues.values where queue.hasQueued { count(queue.drain()) }
    for subscription in fresh { subscription.isFresh = false }
    fresh.removeAll(keepingCapacity: true)
  }

  private func count(_ written: (stateChanged: Int, stats: Int)) {
    counters.notificationsSent += written.stateChanged
    counters.statsSent += written.stats
  }

  var hasStatsSubscribers: Bool { !statsSubscribers.isEmpty }

  /// At a tick: queues the figures for the stats subscriptions owed them (`changed`, or
  /// a change they skipped). A waiting older push is replaced: latest wins.
  func publish(stats: StatsText, changed: Bool) {
    statsSubscribers.forEach { subscription in
      if subscription.statsSkipsATick {
        subscription.statsSkipsATick = false
        subscription.statsOwed = subscription.statsOwed || changed
        return
      }
      guard changed || subscription.statsOwed else { return }
      subscription.statsOwed = false
      put(stats, for: subscription)
    }
  }

  /// A new subscription's first figures; `betweenTicks`: the timer already runs, so its
  /// next tick may be less than a second away.
  func publishFirst(stats: StatsText, to subscription: Subscription, betweenTicks: Bool) {
    subscription.statsSkipsATick = betweenTicks
    put(stats, for: subscription)
  }

  private func put(_ stats: StatsText, for subscription: Subscription) {
    if subscription.queue.put(stats: stats, for: subscription.id) { counters.coalesced += 1 }
  }

  /// Per connection with subscriptions: how many, and how many notifications wait.
  /// Runs `body` once every notification queued for `connection` has been written.
  func afterQueuedNotifications(of connection: Connection, _ body: @escaping () -> Void) {
    guard let queue = queues[connection.id] else { return body() }
    queue.afterQueued(body)
  }

  func figures(of connection: Int) -> (subscriptions: Int, queued: Int) {
    guard let queue = queues[connection] else { return (0, 0) }
    return (queue.subscriptions.count, queue.queuedCount)
  }

  /// A connection's subscriptions in the order they were made (`s2` before `s10`), with their topics.
  func subscriptions(of connection: Int) -> [(id: String, topics: [Topic])] {
    guard let queue = queues[connection] else { return [] }
    return queue.subscriptions.values.sorted { ($0.id.utf8.count, $0.id) < ($1.id.utf8.count, $1.id) }.map {
      ($0.id, $0.topics)
    }
  }

  private func queue(for connection: Connection) -> NotificationQueue {
    if let existing = queues[connection.id] { return existing }
    let created = NotificationQueue(
      connection: connection, listState: { [unowned self] key in self.listState(key) },
      newestVersion: { [unowned self] in self.newestVersion() })
    queues[connection.id] = created
    connection.onDrained = { [weak self, weak created] in
      guard let self, let created, created.hasQueued else { return }
      self.count(created.drain())
    }
    return created
  }

  /// O(its topics): a peer closing with n subscriptions costs O(n), however many
  /// share a topic.
  private func remove(_ subscription: Subscription) {
    func remove<Key: Hashable>(from table: inout [Key: Subscribers], _ key: Key) {
      guard var subscribers = table.removeValue(forKey: key) else { return }
      subscribers.remove(subscription)
      if !subscribers.isEmpty { table[key] = subscribers }
    }
    for topic in subscription.topics {
      switch topic {
      case .entity(let kind?, let id?): remove(from: &exact, EntityKey(kind: kind, id: id))
      case .entity(let kind?, nil): remove(from: &byKind, kind)
      case .entity(nil, _): everything.remove(subscription)
      case .list(let key, _): remove(from: &lists, key)
      case .stats: statsSubscribers.remove(subscription)
      case .mutations: mutationSubscribers.remove(subscription)
      }
    }
  }

  /// The subscriptions to one topic, in the order they were made (so notifications go
  /// out in that order), each once; inserting and removing cost O(1) amortised.
  /// Removed ones leave holes that are squeezed out once they are half the slots.
  struct Subscribers {
    private var slots: [Subscription?] = []
    private var positions: [ObjectIdentifier: Int] = [:]

    var isEmpty: Bool { positions.isEmpty }

    mutating func insert(_ subscription: Subscription) {
      let id = ObjectIdentifier(subscription)
      guard positions[id] == nil else { return }
      positions[id] = slots.count
      slots.append(subscription)
    }

    mutating func remove(_ subscription: Subscription) {
      guard let position = positions.removeValue(forKey: ObjectIdentifier(subscription)) else { return }
      slots[position] = nil
      if positions.isEmpty {
        slots.removeAll()
      } else if slots.count >= 32 && positions.count * 2 < slots.count {
        slots.removeAll { $0 == nil }
        for (index, kept) in slots.enumerated() { positions[ObjectIdentifier(kept!)] = index }
      }
    }

    func forEach(_ body: (Subscription) -> Void) {
      for case let subscription? in slots { body(subscription) }
    }
  }
}

/// The subscribers are who shows the models: each change goes to those who asked for
/// it, and what they hold stays in memory and up to date.
extension SubscriptionHub: ModelObserver {
  func modelChanged(_ change: Models.Change) {
    switch change {
    case .entity(let state): publish(state)
    case .list(let key): publish(list: key)
    }
  }

  func holds(_ entity: EntityKey) -> Bool { isSubscribed(entity) }

  func holds(_ list: ListKey) -> Bool { hasSubscribers(list) }
}
