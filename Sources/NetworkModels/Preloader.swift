import EventLoop

/// Loads what cells will show before they show it (Texture's interface states): an
/// item entering `preload`, `display` or `visible` has its follow state and, where
/// the kind has a detail endpoint, its attributes loaded — visible first, then
/// display, then preload, oldest first within a level. An item that goes back to
/// `none` leaves the queue (work already in flight finishes and is kept). Several
/// hosts may show one item: the highest level any of them gives it counts.
///
/// Must be used on the loop's thread.
public final class Preloader {
  public enum Level: Int, Comparable, Sendable, CaseIterable {
    case none, preload, display, visible

    public init?(name: String) {
      switch name {
      case "none": self = .none
      case "preload": self = .preload
      case "display": self = .display
      case "visible": self = .visible
      default: return nil
      }
    }

    public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
  }

  public struct Counters: Sendable {
    /// Items whose loading started.
    public var started = 0
    /// Queued items that left every host's range before their turn.
    public var cancelled = 0
    /// Detail calls made (by preload and `getEntity`), and those that joined one.
    public var detailCalls = 0
    public var detailShared = 0
  }

  public let store: FollowStore
  /// Items loading at once; more wait in the queue.
  public let maxInFlight: Int
  public private(set) var counters = Counters()
  private var interest: [EntityKey: [Int: Level]] = [:]
  /// One FIFO per level; an entry is live while `queuedAt[key]` says that level.
  private var queues: [[EntityKey]] = Array(repeating: [], count: Level.allCases.count)
  private var heads = Array(repeating: 0, count: Level.allCases.count)
  private var queuedAt: [EntityKey: Level] = [:]
  private var inFlight: Set<EntityKey> = []
  private var detailWaiters: [EntityKey: [(Result<EntityState, FollowStore.SettleFailure>) -> Void]] = [:]
  private var backend: FollowBackend { store.backend }

  public init(store: FollowStore, maxInFlight: Int = 16) {
    self.store = store
    self.maxInFlight = max(1, maxInFlight)
  }

  public var queuedCount: Int { queuedAt.count }
  public var inFlightCount: Int { inFlight.count }

  /// What `host` (a connection) now shows `keys` as.
  public func set(_ keys: [EntityKey], to level: Level, host: Int) {
    for key in keys {
      if level == .none {
        interest[key]?[host] = nil
        if interest[key]?.isEmpty == true { interest[key] = nil }
      } else {
        interest[key, default: [:]][host] = level
      }
      update(key)
    }
    pump()
  }

  /// A host went away: its interest goes with it.
  public func hostGone(_ host: Int) {
    let keys = interest.compactMap { $0.value[host] != nil ? $0.key : nil }
    set(keys, to: .none, host: host)
  }

  public func level(of key: EntityKey) -> Level { interest[key]?.values.max() ?? .none }

  /// `getEntity`: the state with its attributes, loading the detail (and the follow
  /// state when unknown) first when needed. Concurrent calls share one detail call.
  public func entity(
    _ key: EntityKey, refresh: Bool, completion: @escaping (Result<EntityState, FollowStore.SettleFailure>) -> Void
  ) {
    let needsDetail = backend.hasDetail(kind: key.kind) && (refresh || store.state(key).attributes == nil)
    let needsState = refresh || !store.isKnown(key)
    var remaining = (needsDetail ? 1 : 0) + (needsState ? 1 : 0)
    var failure: FollowStore.SettleFailure?
    guard remaining > 0 else { return completion(.success(store.state(key))) }
    let partDone: (Result<EntityState, FollowStore.SettleFailure>) -> Void = { [store] result in
      if case .failure(let error) = result, failure == nil { failure = error }
      remaining -= 1
      guard remaining == 0 else { return }
      if var failure {
        failure.state = store.state(key)
        completion(.failure(failure))
      } else {
        completion(.success(store.state(key)))
      }
    }
    if needsState { store.read(key, refresh: refresh, maxAgeMs: refresh ? 0 : 1 << 40, completion: partDone) }
    if needsDetail { loadDetail(key, completion: partDone) }
  }

  // MARK: The queue

  private func needsWork(_ key: EntityKey) -> Bool {
    !store.isKnown(key) || (backend.hasDetail(kind: key.kind) && store.state(key).attributes == nil)
  }

  private func update(_ key: EntityKey) {
    let level = self.level(of: key)
    let queued = queuedAt[key]
    if level == .none {
      if queued != nil {
        queuedAt[key] = nil
        counters.cancelled += 1
      }
      return
    }
    guard queued != level, !inFlight.contains(key), needsWork(key) else { return }
    queuedAt[key] = level
    queues[level.rawValue].append(key)
  }

  private func pump() {
    while inFlight.count < maxInFlight, let key = nextQueued() {
      start(key)
    }
  }

  private func nextQueued() -> EntityKey? {
    for level in Level.allCases.reversed() where level != .none {
      let index = level.rawValue
      while heads[index] < queues[index].count {
        let key = queues[index][heads[index]]
        heads[index] += 1
        if queuedAt[key] == level {
          queuedAt[key] = nil
          compact(index)
          return key
        }
      }
      compact(index)
    }
    return nil
  }

  private func compact(_ index: Int) {
    if heads[index] == queues[index].count || heads[index] > 4096 {
      queues[index].removeFirst(heads[index])
      heads[index] = 0
    }
  }

  private func start(_ key: EntityKey) {
    counters.started += 1
    inFlight.insert(key)
    entity(key, refresh: false) { [weak self] _ in
      guard let self else { return }
      self.inFlight.remove(key)
      self.pump()
    }
  }

  private func loadDetail(
    _ key: EntityKey, completion: @escaping (Result<EntityState, FollowStore.SettleFailure>) -> Void
  ) {
    if detailWaiters[key] != nil {
      counters.detailShared += 1
      detailWaiters[key]!.append(completion)
      return
    }
    detailWaiters[key] = [completion]
    counters.detailCalls += 1
    backend.fetchDetail(key) { [weak self] result in
      guard let self else { return }
      if case .success(let attributes) = result { self.store.setAttributes(key, attributes) }
      let state = self.store.state(key)
      let waiters = self.detailWaiters.removeValue(forKey: key) ?? []
      for waiter in waiters {
        waiter(result.map { _ in state }.mapError { FollowStore.SettleFailure(failure: $0, state: state) })
      }
    }
  }
}
