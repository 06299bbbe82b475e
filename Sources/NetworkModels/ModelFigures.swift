/// The models' counters and sizes at one moment, as plain values: what `stats` shows of
/// them (the service only encodes them).
public struct ModelFigures {
  public var store: FollowStore.Counters
  public var entities: Int
  public var entitiesPending: Int
  public var entitiesFailed: Int
  public var waitingForCredentials: Int
  public var lists: ListStore.Counters
  public var listsHeld: Int
  public var preload: Preloader.Counters
  public var preloadQueued: Int
  public var preloadInFlight: Int
  /// Unsettled intents, every environment's.
  public var outbox: Int
  /// `HeldBytes.total` and its bound (0: none).
  public var heldBytes: Int
  public var maxHeldBytes: Int
  /// Nil when the backend does not go over HTTP.
  public var http: HTTPStatistics?
}

extension Models {
  public var figures: ModelFigures {
    ModelFigures(
      store: store.counters, entities: store.entityCount, entitiesPending: store.pendingCount,
      entitiesFailed: store.failedCount, waitingForCredentials: store.waitingForCredentialsCount,
      lists: lists.counters, listsHeld: lists.listCount, preload: preloader.counters,
      preloadQueued: preloader.queuedCount, preloadInFlight: preloader.inFlightCount, outbox: outbox?.count ?? 0,
      heldBytes: store.heldBytes.total, maxHeldBytes: store.heldBytes.limit,
      http: statistics?.httpStatistics)
  }
}
