/// What a request asks of the models, each in one call that admits what it names
/// first (`admit`) and answers in values: states, list states, snapshots.
extension Models {
  // MARK: Reads

  /// `getFollowState`: a fresh cached state goes to `cached` at once (nothing is
  /// allocated for it); otherwise the state is read from the backend and answered
  /// through the completion `later` makes, made only then.
  public func readState(
    _ key: EntityKey, refresh: Bool, maxAgeMs: UInt64, cached: (borrowing EntityState) -> Void,
    later: () -> FollowStore.Completion
  ) throws(AdmissionProblem) {
    try admit(key)
    if !refresh, store.withCachedState(key, maxAgeMs: maxAgeMs, cached) { return }
    store.readFromBackend(key, completion: later())
  }

  /// `getEntity`: the state with its details (`Preloader.entity`).
  public func entity(
    _ key: EntityKey, refresh: Bool, completion: @escaping (Result<EntityState, FollowStore.SettleFailure>) -> Void
  ) throws(AdmissionProblem) {
    try admit(key)
    preloader.entity(key, refresh: refresh, completion: completion)
  }

  /// `fetchList`: a page of the list, answered as the list's state joined with the
  /// store when the page is in.
  public func fetchList(
    _ key: ListKey, params: [String: String], page: PageRequest, completion: @escaping (ListState) -> Void
  ) throws(AdmissionProblem) {
    try admit(list: key, params: params)
    let known = lists.fetch(key, params: params, page: page) { [weak self] snapshot in
      guard let self else { return }
      completion(self.joined(snapshot))
    }
    if !known { throw unknownList(key.name) }
  }

  /// `setInterfaceState`: what host `host` shows, each key admitted first (none is
  /// taken when one is refused).
  public func setInterfaceState(_ keys: [EntityKey], to level: Preloader.Level, host: Int)
    throws(IndexedAdmissionProblem)
  {
    try admit(keys)
    preloader.set(keys, to: level, host: host)
  }

  /// A host went: what it asked to preload is forgotten.
  public func hostGone(_ host: Int) { preloader.hostGone(host) }

  // MARK: Snapshots

  /// What a subscription watches in the models: entities (kind nil: every entity;
  /// id nil: every entity of the kind) and lists.
  public enum Topic: Sendable {
    case entity(kind: String?, id: String?)
    case list(ListKey, params: [String: String])
  }

  /// One entity's or one list's state in a snapshot.
  public enum SnapshotPart: Sendable {
    case entity(EntityState)
    case list(ListState)

    public var version: UInt64 {
      switch self {
      case .entity(let state): state.version
      case .list(let state): state.version
      }
    }
  }

  /// The states `topics` name now, given to `take` one at a time, in the topics'
  /// order, until it returns false: each named entity's state once, each wildcard's
  /// matching entities (one walk of the store for every wildcard together, in byte
  /// order of kind and id), each list's state (a list never loaded starts loading).
  /// `topics` are distinct and admitted.
  func snapshot(for topics: [Topic], _ take: (SnapshotPart) -> Bool) -> Bool {
    var named: Set<EntityKey> = []
    for case .entity(let kind?, let id?) in topics { named.insert(EntityKey(kind: kind, id: id)) }
    var shown: Set<EntityKey> = []
    var walked = false
    for topic in topics {
      switch topic {
      case .list(let key, let values):
        lists.loadIfIdle(key, params: values)
        if let list = lists.snapshot(key, params: values), !take(.list(joined(list))) { return false }
      case .entity(let kind?, let id?):
        let key = EntityKey(kind: kind, id: id)
        guard shown.insert(key).inserted else { continue }
        if !take(.entity(store.state(key))) { return false }
      case .entity(_, nil):
        guard !walked else { continue }
        walked = true
        for key in wildcardKeys(of: topics) {
          if !named.isEmpty, named.contains(key), !shown.insert(key).inserted { continue }
          if !take(.entity(store.state(key))) { return false }
        }
      case .entity(nil, .some):
        // An id without a kind is no topic (the service refuses it).
        break
      }
    }
    return true
  }

  /// `subscribe`: admits `topics` (each with its place in the request), gives their
  /// states now to `take` until it returns false — then nothing is subscribed and the
  /// answer is false — and otherwise calls `accepted`, where the caller registers its
  /// subscription so that what follows reaches it, and starts reading the entities
  /// named that were never read.
  public func subscribe(
    _ topics: [(index: Int, topic: Topic)], snapshot take: (SnapshotPart) -> Bool, accepted: () -> Void
  ) throws(IndexedAdmissionProblem) -> Bool {
    try admit(topics)
    guard snapshot(for: topics.map(\.topic), take) else { return false }
    accepted()
    for case .entity(let kind?, let id?) in topics.lazy.map(\.topic) {
      store.fetchIfUnknown(EntityKey(kind: kind, id: id))
    }
    return true
  }

  /// What the wildcard topics among `topics` match, in byte order: every entity when
  /// one names no kind, else the entities of the kinds named (kinds are ASCII, so
  /// `String` equality is byte equality for them).
  private func wildcardKeys(of topics: [Topic]) -> [EntityKey] {
    var kinds: Set<String> = []
    for case .entity(let kind, nil) in topics {
      guard let kind else { return Self.sortedByBytes(store.keys()) }
      kinds.insert(kind)
    }
    if kinds.count == 1, let kind = kinds.first { return Self.sortedByBytes(store.keys(kind: kind)) }
    return Self.sortedByBytes(store.keys().filter { kinds.contains($0.kind) })
  }

  private static func sortedByBytes(_ keys: [EntityKey]) -> [EntityKey] {
    keys.sorted { a, b in
      a.kind.utf8.elementsEqual(b.kind.utf8)
        ? a.id.utf8.lexicographicallyPrecedes(b.id.utf8) : a.kind.utf8.lexicographicallyPrecedes(b.kind.utf8)
    }
  }
}
