import Posix

/// What keeps lists bounded: a load whose pages make no progress ends with a failure
/// (an API answering empty pages that still name a next one, or the same cursor again,
/// would otherwise be asked for pages for ever), and lists nothing uses are evicted
/// like entities.
extension ListStore {
  // MARK: Progress

  /// A refetch asks for at most this many pages more than the list had.
  static let refillPageSlack = 2

  static func pagingFailure(_ message: String) -> FollowFailure {
    FollowFailure(.rejected(status: 0), message)
  }

  /// A page the user asked for (`page: "next"`) that did not advance: its next page
  /// is the one just fetched or one loaded before (a cursor, Link or endCursor that
  /// repeats), or it holds exactly the previous page's items (a server that ignores
  /// the page number or offset). The same items again are also what a head that moved
  /// by exactly one page shows: unless the list's total says it did not move, the list
  /// is walked again first (`shiftDetected`), and only a walk again that meets it too
  /// ends (`refillProblem`).
  func noProgress(_ key: ListKey, _ entry: Entry, _ page: ListPage, _ token: PageToken?) -> FollowFailure? {
    let reason: String
    let mayHaveMoved = !entry.rewalked && (entry.total == nil || page.total == nil || entry.total != page.total)
    if let next = page.next, next == token {
      reason = "the page after \(Self.shown(next)) is \(Self.shown(next)) again"
    } else if let next = page.next, entry.tokens.contains(next) {
      reason = "the next page (\(Self.shown(next))) was loaded before"
    } else if !mayHaveMoved, Self.repeatsPage(page, entry.lastPage) {
      reason = "\(token.map(Self.shown) ?? "the next page") holds the same items as the page before"
    } else {
      return nil
    }
    counters.pagingFailures += 1
    Self.logStalled(key, "a list did not advance: it stopped paging", reason)
    return Self.pagingFailure("the list \(key) did not advance: \(reason)")
  }

  static func repeatsPage(_ page: ListPage, _ before: [EntityKey]) -> Bool {
    !page.items.isEmpty && page.items.count == before.count && zip(page.items, before).allSatisfy { $0.key == $1 }
  }

  static func shown(_ token: PageToken) -> String {
    switch token {
    case .number(let number): "page \(number)"
    case .offset(let offset): "offset \(offset)"
    case .cursor(let cursor): "cursor \"\(cursor.prefix(100))\""
    case .url(let url): String(url.prefix(200))
    }
  }

  /// A page of a refetch: one that holds only items it had already is a page that
  /// repeats.
  func refillProblem(_ key: ListKey, _ entry: Entry, _ page: ListPage, _ token: PageToken?) -> FollowFailure? {
    entry.refillPages += 1
    if let token { entry.refillTokens.insert(token) }
    var fresh = page.items.isEmpty
    for item in page.items where entry.refillKeys.insert(item.key).inserted { fresh = true }
    guard !fresh else { return nil }
    counters.pagingFailures += 1
    if entry.refillPages > 1, Self.repeatsPage(page, entry.lastPage) {
      // A server that ignores the page number or offset, met again once walked again.
      let reason = "page \(entry.refillPages) holds the same items as the page before, also when walked again"
      Self.logStalled(key, "a list did not advance: it stopped paging", reason)
      return Self.pagingFailure("the list \(key) did not advance: \(reason)")
    }
    Self.logStalled(
      key, "a list's refetch stopped paging: a page holds only items it had",
      "page \(entry.refillPages) of the refetch repeats an earlier one")
    return Self.pagingFailure("page \(entry.refillPages) of the refetch of \(key) repeats an earlier one")
  }

  /// Before a refetch asks for `next`: not a page it fetched already, and not beyond
  /// as many pages as the list had, plus `refillPageSlack`.
  func refillNextProblem(_ key: ListKey, _ entry: Entry, _ next: PageToken) -> FollowFailure? {
    let cap = max(entry.pages, 1) + Self.refillPageSlack
    let message: String
    if entry.refillTokens.contains(next) {
      message = "the refetch of \(key) was sent to a page it fetched before (\(next)): the API's paging repeats"
    } else if entry.refillPages >= cap {
      message =
        "the refetch of \(key) stopped after \(cap) pages without reaching the \(entry.refillTarget) items"
        + " the list had"
    } else {
      return nil
    }
    counters.pagingFailures += 1
    Self.logStalled(key, "a list's refetch stopped paging", message)
    return Self.pagingFailure(message)
  }

  /// One line for each list that stopped paging (the failure is the list's state until
  /// it is fetched again).
  static func logStalled(_ key: ListKey, _ sentence: String, _ reason: String) {
    Log.event(
      .warn, "list.stalled", sentence,
      [.init("list", key.name), .init("params", key.paramsText), .init("reason", reason)])
  }

  // MARK: Eviction

  /// Whether anything still needs the list: a subscriber, a page on its way, a caller
  /// waiting for one.
  func isEvictable(_ key: ListKey, _ entry: Entry) -> Bool {
    entry.loading == nil && entry.waiters.isEmpty && entry.refill == nil && hasSubscribers?(key) != true
  }

  func keepBounded() {
    evictionClock.itemAdded()
    guard entries.count > eviction.maxCount, !countCheckQueued else { return }
    countCheckQueued = true
    store.loop.execute { [weak self] in
      guard let self else { return }
      self.countCheckQueued = false
      self.evictOverCount()
    }
  }

  func evictOverCount() {
    guard entries.count > eviction.maxCount else { return }
    var candidates = entries.filter { isEvictable($0.key, $0.value) }.map { (key: $0.key, touched: $0.value.touched) }
    let excess = entries.count - eviction.lowWater
    if candidates.count > excess {
      candidates.sort { $0.touched < $1.touched }
      candidates.removeLast(candidates.count - excess)
    }
    evict(candidates.map(\.key))
    store.evictionReport.evictedForCount(lists: candidates.count)
  }

  /// A page that alone holds more than `--max-held-bytes` fails the load: keeping it
  /// would break the bound, and keeping part of it would show a list that is not the
  /// API's.
  func overBound(_ key: ListKey, _ page: ListPage) -> FollowFailure? {
    let bytes = store.heldBytes
    guard bytes.limit > 0 else { return nil }
    let pageBytes = HeldBytes.of(page.items)
    guard pageBytes > bytes.limit else { return nil }
    counters.overBoundPages += 1
    let message =
      "a page of \(key) holds \(page.items.count) items, about \(pageBytes) bytes:"
      + " more than --max-held-bytes (\(bytes.limit)) allows"
    Log.event(
      .warn, "list.over_bound", "a list page is larger than --max-held-bytes: the load failed",
      [
        .init("list", key.name), .init("params", key.paramsText), .init("items", page.items.count),
        .init("bytes", pageBytes), .init("limit", bytes.limit),
      ])
    // The refused page's decoding is freed once this turn ends; give it back then.
    store.loop.execute { Memory.trim() }
    return Self.pagingFailure(message)
  }

  func keepBytesBounded() {
    guard store.heldBytes.isOver, !byteCheckQueued else { return }
    byteCheckQueued = true
    store.loop.execute { [weak self] in
      guard let self else { return }
      self.byteCheckQueued = false
      self.evictOverBytes()
    }
  }

  /// Drops the least recently used lists nothing needs until the bytes held are below
  /// the low-water mark; then entities, which the dropped lists may have freed.
  func evictOverBytes() {
    let bytes = store.heldBytes
    guard bytes.isOver else { return }
    var candidates = entries.filter { isEvictable($0.key, $0.value) }
      .map { (key: $0.key, touched: $0.value.touched, bytes: $0.value.itemBytes) }
    candidates.sort { $0.touched < $1.touched }
    var excess = bytes.total - bytes.lowWater
    var victims: [ListKey] = []
    for candidate in candidates where excess > 0 && candidate.bytes > 0 {
      victims.append(candidate.key)
      excess -= candidate.bytes
    }
    evict(victims)
    store.evictionReport.evictedForBytes(lists: victims.count)
    store.evictOverBytes()
  }

  /// The idle clock's tick; true while lists are left to age.
  func evictIdle() -> Bool {
    if let idleBefore = evictionClock.idleBefore {
      evict(entries.filter { $0.value.touched <= idleBefore && isEvictable($0.key, $0.value) }.map(\.key))
    }
    if entries.count > eviction.maxCount { evictOverCount() }
    // A list unsubscribed since its page came may go now.
    if store.heldBytes.isOver { evictOverBytes() }
    return !entries.isEmpty
  }

  /// Dropped, a list is one never asked for; its items leave the join, so the entities
  /// only it held can be evicted in turn.
  private func evict(_ keys: [ListKey]) {
    guard !keys.isEmpty else { return }
    for key in keys {
      guard let entry = entries.removeValue(forKey: key) else { continue }
      store.heldBytes.listChanged(by: -entry.itemBytes)
      for item in entry.items {
        guard var lists = containing[item.key] else { continue }
        lists.remove(key)
        containing[item.key] = lists.isEmpty ? nil : lists
      }
    }
    versionFloor = store.versions.next()
    counters.evicted += keys.count
    if containing.capacity > 1024, containing.count < containing.capacity / 4 {
      var copy = [EntityKey: Set<ListKey>](minimumCapacity: containing.count)
      for (key, value) in containing { copy[key] = value }
      containing = copy
    }
    Log.debug("evicted \(keys.count) lists; \(entries.count) held")
  }
}
