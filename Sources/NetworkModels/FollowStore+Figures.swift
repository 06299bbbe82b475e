extension FollowStore {
  /// Entities whose state shows `pending` now (a mutation not settled), for `stats`.
  /// O(entities with work under way), not O(entities): `stats` may be pushed every
  /// second to `netmodel top`.
  public var pendingCount: Int { activities.values.reduce(0) { $0 + ($1.wanted != nil ? 1 : 0) } }

  /// Entities whose state shows an `error` now.
  public var failedCount: Int { errors.count }
}
