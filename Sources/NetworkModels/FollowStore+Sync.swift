import JSON

/// What `sync` waits for: the intents not yet settled, each until it settles.
extension FollowStore {
  /// The entities with an intent the backend has not settled, in byte order.
  public var keysWithPendingIntents: [EntityKey] {
    activities.compactMap { $0.value.wanted != nil ? $0.key : nil }.sorted { a, b in
      a.kind.hasSameBytes(as: b.kind) ? a.id.precedesByBytes(b.id) : a.kind.precedesByBytes(b.kind)
    }
  }

  /// Whether `key`'s intent waits for a retry (its last call failed transiently).
  public func isWaitingToRetry(_ key: EntityKey) -> Bool { activities[key]?.retryTimer != nil }

  /// Calls `settled` once the intent pending for `key` now has settled: with the state
  /// then, or the failure it ended with (an intent that waits for credentials, which
  /// may be never, is answered at once with that failure, as `follow await` is).
  public func whenSettled(_ key: EntityKey, _ settled: @escaping Completion) {
    guard let work = activities[key], work.wanted != nil else { return settled(.success(state(key))) }
    if waitingForCredentials.contains(key) {
      return settled(.failure(SettleFailure(failure: credentialsFailure(key), state: state(key))))
    }
    work.settleWaiters.append(settled)
  }
}
