import Posix

/// Eviction: a host scrolling an endless feed must not grow the process without bound.
/// An entity nothing needs — no work under way (a pending intent, waiting for
/// credentials or not, a read, a retry), nothing outside holding it (`isHeld`) — is
/// dropped once unused for `eviction.idle`, or, beyond `eviction.maxCount`, least
/// recently used first. Dropped, it is exactly an entity never seen: the next use
/// fetches it again, and its versions continue above every version it had
/// (`versionFloor`).
extension FollowStore {
  /// The version the last eviction took (the base when none was made): a client that
  /// saw every change up to a lower one may hold states this store no longer does.
  public var lastEvictionVersion: UInt64 { versions.base &+ versionFloor }

  func isEvictable(_ key: EntityKey) -> Bool {
    activities[key] == nil && !waitingForCredentials.contains(key) && isHeld?(key) != true
  }

  /// Starts the idle clock and checks the count after an entity was added or used.
  func keepBounded() {
    evictionClock.itemAdded()
    guard records.count > max(eviction.maxCount, nextCountCheck), !countCheckQueued else { return }
    // Not now: the caller is in the middle of a change and holds keys it will read.
    countCheckQueued = true
    loop.execute { [lifetime, unowned self] in
      guard !lifetime.ended else { return }
      self.countCheckQueued = false
      self.evictOverCount()
    }
  }

  /// Drops the least recently used evictable entities down to the low-water mark.
  func evictOverCount() {
    guard records.count > eviction.maxCount else { return }
    var candidates: [(key: EntityKey, touched: UInt32)] = []
    for (key, record) in records where isEvictable(key) { candidates.append((key, record.touched)) }
    let excess = records.count - eviction.lowWater
    if candidates.count > excess {
      candidates.sort { $0.touched < $1.touched }
      candidates.removeLast(candidates.count - excess)
    }
    evict(candidates.map(\.key))
    evictionReport.evictedForCount(entities: candidates.count)
    // What could not be evicted is held: look again only after an eighth more arrived,
    // so a store whose entities are all held scans them a bounded number of times.
    nextCountCheck = records.count + max(eviction.maxCount, records.count) / 8
  }

  /// Checks the bytes held after a detail object was kept; like the count, later.
  func keepBytesBounded() {
    guard heldBytes.isOver, !byteCheckQueued else { return }
    byteCheckQueued = true
    loop.execute { [lifetime, unowned self] in
      guard !lifetime.ended else { return }
      self.byteCheckQueued = false
      self.evictOverBytes()
    }
  }

  /// Drops the least recently used evictable entities that hold a detail object until
  /// the bytes held are below the low-water mark (or nothing evictable is left).
  func evictOverBytes() {
    guard heldBytes.isOver else { return }
    var candidates: [(key: EntityKey, touched: UInt32, bytes: Int)] = []
    for (key, text) in attributes where isEvictable(key) {
      candidates.append((key, records[key]?.touched ?? 0, text.utf8.count))
    }
    candidates.sort { $0.touched < $1.touched }
    var excess = heldBytes.total - heldBytes.lowWater
    var victims: [EntityKey] = []
    for candidate in candidates where excess > 0 {
      victims.append(candidate.key)
      excess -= candidate.bytes
    }
    evict(victims)
    evictionReport.evictedForBytes(entities: victims.count)
    // Large details are freed in the heap, not given back, unless asked.
    if !victims.isEmpty { Memory.trim() }
  }

  /// The idle clock's tick: drops what was unused for the idle time. True while
  /// something is left to age.
  func evictIdle() -> Bool {
    if let idleBefore = evictionClock.idleBefore {
      var victims: [EntityKey] = []
      for (key, record) in records where record.touched <= idleBefore && isEvictable(key) { victims.append(key) }
      evict(victims)
    }
    if records.count > eviction.maxCount { evictOverCount() }
    // What was held when it came (shown, in a list) may be free now.
    if heldBytes.isOver { evictOverBytes() }
    return !records.isEmpty
  }

  private func evict(_ keys: [EntityKey]) {
    guard !keys.isEmpty else { return }
    for key in keys {
      guard records.removeValue(forKey: key) != nil else { continue }
      if !errors.isEmpty { errors[key] = nil }
      if !readErrors.isEmpty { readErrors.remove(key) }
      if !attributes.isEmpty, let old = attributes.removeValue(forKey: key) {
        heldBytes.entityChanged(from: old, to: nil)
      }
      // A read refused for want of credentials is not work: seen again, it is read again.
      if !readsWaitingForCredentials.isEmpty { readsWaitingForCredentials.remove(key) }
    }
    versionFloor = versions.next()
    counters.evicted += keys.count
    nextCountCheck = min(nextCountCheck, records.count + max(eviction.maxCount, records.count) / 8)
    shrink()
    Log.debug("evicted \(keys.count) entities; \(records.count) held")
  }

  /// Dictionaries keep their capacity when emptied: after a burst (a long feed,
  /// scrolled and closed) give the memory back.
  private func shrink() {
    var trimmed = records.shrinkIfMostlyEmpty()
    trimmed = attributes.shrinkIfMostlyEmpty() || trimmed
    trimmed = errors.shrinkIfMostlyEmpty() || trimmed
    trimmed = activities.shrinkIfMostlyEmpty() || trimmed
    if trimmed { Memory.trim() }
  }
}
