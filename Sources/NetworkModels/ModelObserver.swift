/// What the models ask of whoever shows them (the service's subscriptions): it is
/// told every change, and says what its subscribers hold, which must stay in memory
/// and up to date.
public protocol ModelObserver: AnyObject {
  func modelChanged(_ change: Models.Change)
  /// Whether a subscriber holds the entity by its exact topic: it is never evicted.
  func holds(_ entity: EntityKey) -> Bool
  /// Whether a subscriber holds the list: out of date, it is fetched again at once.
  func holds(_ list: ListKey) -> Bool
}
