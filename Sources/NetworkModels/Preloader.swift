import EventLoop
import HTTP

/// Loads what cells will show before they show it (Texture's interface states): an
/// item entering `preload`, `display` or `visible` has its follow state and, where
/// the kind has a detail endpoint, its attributes loaded — visible first, then
/// display, then preload, oldest first within a level. An item that goes back to
/// `none` leaves the queue (work already in flight finishes and is kept). Several
/// hosts may show one item: the highest level any of them gives it counts.
///
/// With a `PrioritisedBackend` (REST), loads are handed over with their level, and a
/// load's detail call that still waits for a connection is moved when the level
/// changes and given up at `none`. Then `maxInFlight` counts per level: a load starts
/// while fewer than that many of its level or higher are under way, so loads of lower
/// levels never hold a higher one back here; the HTTP client's queue orders them.
/// Other backends answer in the order asked: there the limit is for all levels.
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
    /// Items that left every host's range before their turn: in this queue, or with
    /// their detail call still waiting for a connection (given up, never sent).
    public var cancelled = 0
    /// Detail calls made (by preload and `getEntity`; one given up before it went out
    /// is not counted), and those that joined one.
    public var detailCalls = 0
    public var detailShared = 0
  }

  public let store: FollowStore
  /// Items loading at once (per level and above, with a `PrioritisedBackend`); more
  /// wait in the queue.
  public let maxInFlight: Int
  public private(set) var counters = Counters()
  private var interest: [EntityKey: [Int: Level]] = [:]
  /// One FIFO per level; an entry is live while `queuedAt[key]` says that level.
  private var queues: [[EntityKey]] = Array(repeating: [], count: Level.allCases.count)
  private var heads = Array(repeating: 0, count: Level.allCases.count)
  private var queuedAt: [EntityKey: Level] = [:]
  /// Loads under way, each counted at its item's level (`preload` once it is `none`).
  private var inFlight: [EntityKey: Load] = [:]
  private var inFlightPerLevel = Array(repeating: 0, count: Level.allCases.count)
  private var details: [EntityKey: DetailCall] = [:]
  private let detailSource: DetailSource?
  private let prioritised: PrioritisedBackend?

  private struct Load {
    var level: Level
    /// Its detail call was given up: if the item comes back, it is queued again.
    var detailCancelled = false
  }

  /// One detail call and everyone waiting for it; at `.user` priority once a
  /// `getEntity` waits for it, and then never moved or given up.
  private final class DetailCall {
    typealias Waiter = (Result<EntityState, FollowStore.SettleFailure>) -> Void
    var waiters: [Waiter]
    var priority: HTTPPriority
    var pending: PendingCall?

    init(_ waiter: @escaping Waiter, priority: HTTPPriority) {
      waiters = [waiter]
      self.priority = priority
    }
  }

  public init(store: FollowStore, maxInFlight: Int = 16) {
    self.store = store
    self.maxInFlight = max(1, maxInFlight)
    detailSource = store.capabilities.details
    prioritised = store.capabilities.prioritised
  }

  public var queuedCount: Int { queuedAt.count }
  public var inFlightCount: Int { inFlight.count }

  /// Whether a host shows `key` or its load is under way: it must stay in the store.
  public func isBusy(_ key: EntityKey) -> Bool {
    interest[key] != nil || queuedAt[key] != nil || inFlight[key] != nil || details[key] != nil
  }

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
    // A host that showed a long feed leaves a table sized for it: give that back.
    if interest.capacity > 1024, interest.count < interest.capacity / 4 {
      var copy = [EntityKey: [Int: Level]](minimumCapacity: interest.count)
      for (key, value) in interest { copy[key] = value }
      interest = copy
    }
  }

  public func level(of key: EntityKey) -> Level { interest[key]?.values.max() ?? .none }

  /// `getEntity`: the state with its attributes, loading the detail (and the follow
  /// state when unknown) first when needed. Concurrent calls share one detail call.
  public func entity(
    _ key: EntityKey, refresh: Bool, completion: @escaping (Result<EntityState, FollowStore.SettleFailure>) -> Void
  ) {
    load(key, refresh: refresh, priority: .user, completion: completion)
  }

  private func load(
    _ key: EntityKey, refresh: Bool, priority: HTTPPriority,
    completion: @escaping (Result<EntityState, FollowStore.SettleFailure>) -> Void
  ) {
    let source = detailSource.flatMap { $0.hasDetail(kind: key.kind) ? $0 : nil }
    let needsDetail = source != nil && (refresh || store.state(key).attributes == nil)
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
    if needsState {
      // The store calls the backend inside `read` (or not at all): the priority set
      // around it is the read's.
      let before = prioritised?.readPriority
      prioritised?.readPriority = priority
      store.read(key, refresh: refresh, maxAgeMs: refresh ? 0 : 1 << 40, completion: partDone)
      if let before { prioritised?.readPriority = before }
    }
    if needsDetail, let source { loadDetail(key, from: source, priority: priority, completion: partDone) }
  }

  // MARK: The queue

  private func needsWork(_ key: EntityKey) -> Bool {
    !store.isKnown(key) || (detailSource?.hasDetail(kind: key.kind) == true && store.state(key).attributes == nil)
  }

  private func update(_ key: EntityKey) {
    let level = self.level(of: key)
    if let load = inFlight[key] {
      let counted = max(level, .preload)
      inFlightPerLevel[load.level.rawValue] -= 1
      inFlightPerLevel[counted.rawValue] += 1
      inFlight[key]?.level = counted
      guard let call = details[key], call.priority < .user else { return }
      if level == .none {
        if call.pending?.cancel() == true {
          details[key] = nil
          inFlight[key]?.detailCancelled = true
          counters.cancelled += 1
          counters.detailCalls -= 1
        }
      } else if call.priority != level.priority {
        call.priority = level.priority
        call.pending?.setPriority(level.priority)
      }
      return
    }
    let queued = queuedAt[key]
    if level == .none {
      if queued != nil {
        queuedAt[key] = nil
        counters.cancelled += 1
      }
      return
    }
    guard queued != level, needsWork(key) else { return }
    queuedAt[key] = level
    queues[level.rawValue].append(key)
  }

  private func pump() {
    while let (key, level) = nextQueued() {
      start(key, level)
    }
  }

  /// Loads under way that hold back one of `level`.
  private func inFlight(atLeast level: Level) -> Int {
    prioritised == nil ? inFlight.count : inFlightPerLevel[level.rawValue...].reduce(0, +)
  }

  private func nextQueued() -> (EntityKey, Level)? {
    for level in Level.allCases.reversed() where level != .none {
      // Fewer free places for each lower level: none there either.
      guard inFlight(atLeast: level) < maxInFlight else { return nil }
      let index = level.rawValue
      while heads[index] < queues[index].count {
        let key = queues[index][heads[index]]
        heads[index] += 1
        if queuedAt[key] == level {
          queuedAt[key] = nil
          compact(index)
          return (key, level)
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

  private func start(_ key: EntityKey, _ level: Level) {
    counters.started += 1
    inFlight[key] = Load(level: level)
    inFlightPerLevel[level.rawValue] += 1
    load(key, refresh: false, priority: level.priority) { [weak self] _ in
      guard let self, let load = self.inFlight.removeValue(forKey: key) else { return }
      self.inFlightPerLevel[load.level.rawValue] -= 1
      if load.detailCancelled { self.update(key) }
      self.pump()
    }
  }

  private func loadDetail(
    _ key: EntityKey, from source: DetailSource, priority: HTTPPriority,
    completion: @escaping (Result<EntityState, FollowStore.SettleFailure>) -> Void
  ) {
    if let call = details[key] {
      counters.detailShared += 1
      call.waiters.append(completion)
      if priority > call.priority {
        call.priority = priority
        call.pending?.setPriority(priority)
      }
      return
    }
    let call = DetailCall(completion, priority: priority)
    details[key] = call
    counters.detailCalls += 1
    let done: (Result<String, FollowFailure>) -> Void = { [weak self] result in
      guard let self else { return }
      // A call given up is no longer `details[key]`: a later one may be.
      if self.details[key] === call { self.details[key] = nil }
      if case .success(let attributes) = result { self.store.setAttributes(key, attributes) }
      let state = self.store.state(key)
      for waiter in call.waiters {
        waiter(result.map { _ in state }.mapError { FollowStore.SettleFailure(failure: $0, state: state) })
      }
    }
    if let prioritised {
      call.pending = prioritised.fetchDetail(key, priority: priority, completion: done)
    } else {
      source.fetchDetail(key, completion: done)
    }
  }
}

extension Preloader.Level {
  /// Where this level's calls wait for a connection (`none` loads nothing).
  var priority: HTTPPriority {
    switch self {
    case .none, .preload: .preload
    case .display: .display
    case .visible: .visible
    }
  }
}
