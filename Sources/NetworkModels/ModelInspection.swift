import EventLoop
import HTTP
import JSON

/// What the models hold that is not settled, item by item, as plain values: the
/// entities with work or trouble, the outbox's intents, the lists in memory and the
/// HTTP client's holds (`inspect`; the service only encodes them). Each section is
/// bounded by the caller's limit and says how many it left out.
public enum ModelInspection {
  /// The first `items` of `total` found.
  public struct Section<Item> {
    public var total: Int
    public var items: [Item]
    public var omitted: Int { total - items.count }
  }

  public typealias Entities = Section<Entity>
  public typealias Intents = Section<Intent>
  public typealias Lists = Section<List>

  public struct Entity {
    public var key: EntityKey
    public var following: Bool?
    public var confirmed: Bool?
    /// A mutation not settled.
    public var pending: Bool
    /// A read of the backend under way.
    public var reading: Bool
    /// A follow request awaiting approval.
    public var requested: Bool
    /// The intent or the last read was refused for want of credentials.
    public var waitingForCredentials: Bool
    /// A retry is scheduled.
    public var retrying: Bool
    /// Failed calls of the mutation under way.
    public var attempts: Int
    /// Since when it is in this state: the oldest of its mutation's start, its read's
    /// start, its error, its request's confirmation.
    public var since: LoopInstant?
    public var error: FollowFailure?
  }

  public struct Intent {
    public var key: EntityKey
    /// The environment it was made in (nil: the log names none).
    public var environment: String?
    public var wanted: Bool
    /// Made in the environment that is active: only these are sent.
    public var active: Bool
    public var attempts: Int
    public var since: LoopInstant?
    public var error: FollowFailure?
  }

  public struct List {
    public var key: ListKey
    public var phase: ListStore.Phase
    public var items: Int
    public var pages: Int
    public var hasMore: Bool
    /// Out of date since a follow it depends on was confirmed.
    public var stale: Bool
    public var loading: Bool
    /// Why the list was last walked again (its head moved while it was paged); nil: never.
    public var shifted: String? = nil
    /// When the last page's answer came; nil: none yet.
    public var answeredAt: LoopInstant?
    public var error: FollowFailure?
  }

  /// The HTTP client's queue and hold (`HTTPClient.holds`), and the API it calls.
  public struct Holds {
    /// The base URL requests go to (the active environment's).
    public var api: String
    public var environment: String
    public var queue: HTTPClient.Holds
  }
}

extension Models {
  /// Entities with a mutation, a read or a retry under way, an error, a follow request
  /// or a refusal for want of credentials, of `kind` (and `id`) when given, oldest
  /// first. O(entities) for the requests (a bit of their record), else O(entities with
  /// one of these); only the `limit` listed are looked at whole.
  public func inspectEntities(kind: String?, id: String?, limit: Int) -> ModelInspection.Entities {
    func wanted(_ key: EntityKey) -> Bool {
      if let kind, !key.kind.hasSameBytes(as: kind) { return false }
      if let id, !key.id.hasSameBytes(as: id) { return false }
      return true
    }
    // Each entity offered once: from the first table that lists it, in this order.
    var oldest = SmallestFirst<(since: UInt64, key: EntityKey)>(limit: limit) {
      ($0.since, $0.key) < ($1.since, $1.key)
    }
    let store = self.store
    func busy(_ key: EntityKey) -> Bool { store.activities[key].map(FollowStore.isInspected) ?? false }
    for (key, work) in store.activities where FollowStore.isInspected(work) && wanted(key) {
      oldest.offer((store.inspectedSince(key, work), key))
    }
    for (key, _) in store.errors where wanted(key) && !busy(key) {
      oldest.offer((store.inspectedSince(key, nil), key))
    }
    let waiting = store.waitingForCredentials.union(store.readsWaitingForCredentials)
    for key in waiting where wanted(key) && !busy(key) && store.errors[key] == nil {
      oldest.offer((store.inspectedSince(key, nil), key))
    }
    func requestOnly(_ key: EntityKey) -> Bool { !busy(key) && store.errors[key] == nil && !waiting.contains(key) }
    if let kind, let id {
      let key = EntityKey(kind: kind, id: id)
      if store.records[key]?.requested == true && requestOnly(key) {
        oldest.offer((store.inspectedSince(key, nil), key))
      }
    } else {
      for (key, record) in store.records where record.requested && wanted(key) && requestOnly(key) {
        oldest.offer((store.inspectedSince(key, nil), key))
      }
    }
    return ModelInspection.Section(total: oldest.offered, items: oldest.kept.map { store.inspected($0.key) })
  }

  /// The outbox's unsettled intents (every environment's), in the order they were
  /// last changed; without an outbox, the store's pending mutations.
  public func inspectIntents(kind: String?, limit: Int) -> ModelInspection.Intents {
    let active = outbox?.environment
    let found: (total: Int, oldest: [(environment: String?, key: EntityKey, wanted: Bool)])
    if let outbox {
      found = outbox.oldestIntents(kind: kind, limit: limit)
    } else {
      var oldest = SmallestFirst<(environment: String?, key: EntityKey, wanted: Bool)>(limit: limit) {
        $0.key < $1.key
      }
      for (key, work) in store.activities {
        guard let wanted = work.wanted, kind.map({ key.kind.hasSameBytes(as: $0) }) ?? true else { continue }
        oldest.offer((nil, key, wanted))
      }
      found = (oldest.offered, oldest.kept)
    }
    let intents = found.oldest.map { environment, key, wanted in
      let isActive = environment.map { active?.hasSameBytes(as: $0) ?? false } ?? true
      let work = isActive ? store.activities[key] : nil
      return ModelInspection.Intent(
        key: key, environment: environment, wanted: wanted, active: isActive, attempts: work?.attempt ?? 0,
        since: work?.wanted != nil ? work?.pendingSince : nil, error: isActive ? store.errors[key]?.failure : nil)
    }
    return ModelInspection.Section(total: found.total, items: intents)
  }

  /// The lists in memory, by name and params.
  public func inspectLists(limit: Int) -> ModelInspection.Lists {
    let keys = lists.entries.keys.sorted {
      $0.name.precedesByBytes($1.name)
        || ($0.name.hasSameBytes(as: $1.name) && $0.paramsText.precedesByBytes($1.paramsText))
    }
    let shown = keys.prefix(limit).compactMap { key -> ModelInspection.List? in
      guard let entry = lists.entries[key] else { return nil }
      return ModelInspection.List(
        key: key, phase: entry.phase, items: entry.items.count, pages: entry.pages, hasMore: entry.hasMore,
        stale: entry.stale, loading: entry.loading != nil, shifted: entry.shifted, answeredAt: entry.answeredAt,
        error: entry.error)
    }
    return ModelInspection.Section(total: keys.count, items: shown)
  }

  /// The HTTP client's hold and queue (the first `limit` requests waiting); nil when the
  /// backend does not go over HTTP.
  public func inspectHolds(limit: Int) -> ModelInspection.Holds? { statistics?.holds(limit: limit) }
}

extension FollowStore {
  /// An activity `inspect` lists: a mutation, a read or a retry under way.
  static func isInspected(_ work: Activity) -> Bool {
    work.wanted != nil || work.readInFlight || work.retryTimer != nil || work.checkTimer != nil
  }

  /// `inspected(key).since` in nanoseconds (unknown: last), without making the entity.
  func inspectedSince(_ key: EntityKey, _ work: Activity?) -> UInt64 {
    var since = UInt64.max
    if let work, work.wanted != nil { since = min(since, work.pendingSince.nanoseconds) }
    if let work, work.readInFlight { since = min(since, work.readSince.nanoseconds) }
    if !errors.isEmpty, let shown = errors[key] { since = min(since, shown.at.nanoseconds) }
    if since == .max, let record = records[key], record.requested, record.confirmedAt.nanoseconds > 0 {
      since = record.confirmedAt.nanoseconds
    }
    return since
  }

  func inspected(_ key: EntityKey) -> ModelInspection.Entity {
    let record = records[key] ?? freshRecord
    let work = activities[key]
    let shown = errors[key]
    let pending = work?.wanted != nil
    let reading = work?.readInFlight == true
    var since: LoopInstant?
    func earliest(_ instant: LoopInstant?) {
      guard let instant else { return }
      since = since.map { min($0, instant) } ?? instant
    }
    if pending { earliest(work?.pendingSince) }
    if reading { earliest(work?.readSince) }
    earliest(shown?.at)
    if record.requested && record.confirmedAt.nanoseconds > 0 { earliest(record.confirmedAt) }
    return ModelInspection.Entity(
      key: key, following: record.following, confirmed: record.confirmed, pending: pending, reading: reading,
      requested: record.requested,
      waitingForCredentials: waitingForCredentials.contains(key) || readsWaitingForCredentials.contains(key),
      retrying: work?.retryTimer != nil || work?.checkTimer != nil, attempts: work?.attempt ?? 0, since: since,
      error: shown?.failure)
  }
}
