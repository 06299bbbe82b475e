/// A list as a client sees it: its items joined with the entity store, so an item
/// shows the store's `following` (which moves with every follow) and the store's
/// attributes when it has them. A plain value: the service only encodes it.
public struct ListState: Sendable, Equatable {
  public struct Item: Sendable, Equatable {
    public var key: EntityKey
    public var following: Bool?
    /// Compact JSON text.
    public var attributes: String?
  }

  public var key: ListKey
  public var phase: ListStore.Phase
  public var items: [Item]
  public var sections: [ListStore.Section]
  public var hasMore: Bool
  public var error: FollowFailure?
  public var version: UInt64
}

extension Models {
  /// `snapshot` joined with the store as it is now.
  func joined(_ snapshot: ListStore.Snapshot) -> ListState {
    var items: [ListState.Item] = []
    items.reserveCapacity(snapshot.items.count)
    for item in snapshot.items {
      let entity = store.state(item.key)
      items.append(
        ListState.Item(
          key: item.key, following: entity.following ?? item.following, attributes: entity.attributes ?? item.attributes
        ))
    }
    return ListState(
      key: snapshot.key, phase: snapshot.phase, items: items, sections: snapshot.sections, hasMore: snapshot.hasMore,
      error: snapshot.error, version: snapshot.version)
  }

  /// The list's state now, or nil when it is not in memory.
  public func listState(_ key: ListKey) -> ListState? {
    lists.snapshot(key).map(joined)
  }
}
