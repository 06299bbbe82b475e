import JSON
import JSONRPC
import NetworkModels

extension Subscribe {
  /// The `snapshot` array of a reply, written as it is gathered: the entities' states,
  /// then the lists' ListStates. It stops growing once it passes `limit` (the peer's
  /// `--max-unread-bytes`, as a batch's reply does), so a refused snapshot costs no
  /// more than the limit to write.
  struct Snapshot {
    let limit: Int
    private var states: [UInt8] = []
    private var lists: [UInt8] = []

    init(limit: Int) { self.limit = limit }

    var isOverLimit: Bool { states.count + lists.count > limit }

    mutating func append(_ state: EntityState) {
      if !states.isEmpty { states.append(UInt8(ascii: ",")) }
      state.encode(into: &states)
    }

    mutating func append(_ list: ListStore.Snapshot, by service: NetmodelService) {
      if !lists.isEmpty { lists.append(UInt8(ascii: ",")) }
      service.encode(list, into: &lists)
    }

    func encode(into buffer: inout [UInt8]) {
      buffer.append(UInt8(ascii: "["))
      buffer.append(contentsOf: states)
      if !states.isEmpty && !lists.isEmpty { buffer.append(UInt8(ascii: ",")) }
      buffer.append(contentsOf: lists)
      buffer.append(UInt8(ascii: "]"))
    }
  }

  /// Gathers the snapshot of distinct `topics`: each named entity's state, each
  /// wildcard's matching entities (one walk of the store for every wildcard together,
  /// in byte order of kind and id), each list's ListState (a list never loaded starts
  /// loading). Stops at the limit.
  static func snapshot(
    of topics: [SubscriptionHub.Topic], by service: NetmodelService, limit: Int
  ) -> Snapshot {
    var snapshot = Snapshot(limit: limit)
    var named: Set<SubscriptionHub.TopicIdentity> = []
    for case .entity(let kind?, let id?) in topics { named.insert(.entity(kind: kind, id: id)) }
    var shown: Set<SubscriptionHub.TopicIdentity> = []
    var walked = false
    for topic in topics where !snapshot.isOverLimit {
      switch topic {
      case .list(let key, let values):
        service.lists.loadIfIdle(key, params: values)
        if let list = service.lists.snapshot(key, params: values) { snapshot.append(list, by: service) }
      case .entity(let kind?, let id?):
        guard shown.insert(.entity(kind: kind, id: id)).inserted else { continue }
        snapshot.append(service.store.state(EntityKey(kind: kind, id: id)))
      case .entity(_, nil):
        guard !walked else { continue }
        walked = true
        for key in wildcardKeys(of: topics, in: service.store) {
          if !named.isEmpty {
            let identity = SubscriptionHub.TopicIdentity.entity(kind: key.kind, id: key.id)
            if named.contains(identity) && !shown.insert(identity).inserted { continue }
          }
          snapshot.append(service.store.state(key))
          if snapshot.isOverLimit { break }
        }
      case .entity(nil, .some), .stats:
        // An id without a kind never gets here (`topic` refuses it); a stats topic's
        // snapshot comes as its first `statsChanged`, right after this reply.
        break
      }
    }
    return snapshot
  }

  /// What the wildcard topics among `topics` match, in byte order: every entity when
  /// one names no kind, else the entities of the kinds named (kinds are ASCII, so
  /// `String` equality is byte equality for them).
  private static func wildcardKeys(of topics: [SubscriptionHub.Topic], in store: FollowStore) -> [EntityKey] {
    var kinds: Set<String> = []
    for case .entity(let kind, nil) in topics {
      guard let kind else { return sortedByBytes(store.keys()) }
      kinds.insert(kind)
    }
    if kinds.count == 1, let kind = kinds.first { return sortedByBytes(store.keys(kind: kind)) }
    return sortedByBytes(store.keys().filter { kinds.contains($0.kind) })
  }

  private static func sortedByBytes(_ keys: [EntityKey]) -> [EntityKey] {
    keys.sorted { a, b in
      a.kind.utf8.elementsEqual(b.kind.utf8)
        ? a.id.utf8.lexicographicallyPrecedes(b.id.utf8) : a.kind.utf8.lexicographicallyPrecedes(b.kind.utf8)
    }
  }

  /// The answer when the snapshot would pass the peer's limit: nothing was subscribed.
  static func snapshotTooLarge(limit: Int) -> ResponseError {
    var data: [UInt8] = []
    appendLiteral(#"{"path":"/topics","limit":"#, to: &data)
    appendDecimal(Int64(limit), to: &data)
    data.append(UInt8(ascii: "}"))
    return ResponseError(
      .invalidParams,
      "the snapshot of these topics passes the limit of \(limit) bytes (--max-unread-bytes); "
        + "nothing was subscribed: subscribe to fewer or narrower topics (a kind or an id, not every entity)",
      dataText: data)
  }
}
