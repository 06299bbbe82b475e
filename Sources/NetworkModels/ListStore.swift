import EventLoop

/// The stateful list data sources (docs/protocol.md "Lists", `ListState`): each list is idle,
/// loading, loaded or failed; pages append; a refresh replaces the items when it
/// arrives and keeps the old ones meanwhile; a failed page keeps what was loaded
/// and can be asked for again. Items reference entities of the `FollowStore`, so a
/// follow shows in every loaded list that holds the entity (the join); a confirmed
/// follow or unfollow makes the lists that depend on its kind out of date.
///
/// Must be used on the loop's thread.
public final class ListStore {
  public enum Phase: String, Sendable {
    case idle, loading, loaded, failure
  }

  public struct Section: Sendable, Equatable {
    public var title: String
    public var start: Int
    public var count: Int
  }

  /// A list as `ListState` shows it (items not yet joined with the entity store).
  public struct Snapshot: Sendable {
    public var key: ListKey
    public var phase: Phase
    public var items: [ListItem]
    public var hasMore: Bool
    public var error: FollowFailure?
    public var version: UInt64

    /// Runs of items with the same section title, in item order; empty when no item
    /// has a title.
    public var sections: [Section] {
      var sections: [Section] = []
      for (index, item) in items.enumerated() {
        guard let title = item.sectionTitle else { continue }
        if let last = sections.last, last.title == title, last.start + last.count == index {
          sections[sections.count - 1].count += 1
        } else {
          sections.append(Section(title: title, start: index, count: 1))
        }
      }
      return sections
    }
  }

  public struct Counters: Sendable {
    /// Pages asked of the backend.
    public var pageCalls = 0
    /// fetchList calls that joined a page already in flight.
    public var sharedFetches = 0
    /// Lists made out of date by a confirmed follow or unfollow.
    public var invalidations = 0
    /// Lists dropped from memory (see `eviction`).
    public var evicted = 0
    /// Loads ended because the pages made no progress: a page or cursor seen before,
    /// or a refetch's page cap.
    public var pagingFailures = 0
    /// Next pages that repeated items the list showed: its head moved while it was paged.
    public var shifts = 0
    /// Loads ended because one page alone held more than `--max-held-bytes`.
    public var overBoundPages = 0
  }

  final class Entry {
    let description: ListDescription
    var params: [String: String]
    var phase = Phase.idle
    var items: [ListItem] = []
    /// `HeldBytes.of(items)`, kept as items come and go.
    var itemBytes = 0
    var next: PageToken?
    var hasMore = true
    var error: FollowFailure?
    var version: UInt64 = 0
    var loading: PageRequest?
    /// Bumped by every page asked for: an answer to an earlier one (a load abandoned
    /// with the world it was asked in) is not read.
    var loadSerial: UInt64 = 0
    var waiters: [(Snapshot) -> Void] = []
    /// A follow it depends on was confirmed since it loaded.
    var stale = false
    /// While an out-of-date list is fetched again: the pages so far, shown only once
    /// they hold as many items as the list had (a host scrolled far must not see its
    /// list shrink to the first page because something was followed).
    var refill: [ListItem]?
    var refillTarget = 0
    /// The refetch's pages so far, the tokens they were fetched with and the
    /// entities they held: its progress check.
    var refillPages = 0
    var refillTokens: Set<PageToken> = []
    var refillKeys: Set<EntityKey> = []
    /// Pages loaded since the first, and the tokens they were fetched with: a next
    /// page whose token is among them would start the same pages over.
    var pages = 0
    var tokens: Set<PageToken> = []
    /// The entities of the page loaded last: a next page of exactly these did not advance.
    var lastPage: [EntityKey] = []
    /// What the answer read last said: the list's total, and its last item (the one an
    /// overlapping next page must start with).
    var total: Int?
    var lastItem: EntityKey?
    /// This walk met a moved head and was walked again: a second move does not restart it.
    var rewalked = false
    /// The last move met, in words, for `inspect`.
    var shifted: String?
    /// The eviction tick of its last use.
    var touched: UInt32 = 0
    /// When the last page's answer (or failure) came, for `inspect`.
    var answeredAt: LoopInstant?

    init(description: ListDescription, params: [String: String]) {
      self.description = description
      self.params = params
    }
  }

  public let store: FollowStore
  /// The backend's lists; without any, every list is unknown.
  public let source: ListSource?
  /// Called after every change of a list's state.
  public var onChange: ((ListKey) -> Void)?
  /// Whether anyone listens to a list: out-of-date lists with listeners are fetched
  /// again at once, the others when next asked for.
  public var hasSubscribers: ((ListKey) -> Bool)?
  public internal(set) var counters = Counters()
  var entries: [ListKey: Entry] = [:]
  /// The join: which lists hold an entity.
  var containing: [EntityKey: Set<ListKey>] = [:]
  /// How many lists stay in memory, and for how long one nobody uses stays.
  public var eviction = EvictionPolicy.lists {
    didSet { evictionClock.policy = eviction }
  }
  lazy var evictionClock = EvictionClock(loop: store.loop, policy: eviction) { [unowned self] in
    self.evictIdle()
  }
  /// Where a list not held starts: a step taken at the last eviction, above every
  /// version an evicted list showed, so a list evicted and asked for again never goes
  /// backwards, and shows a version above what a client held before.
  var versionFloor: UInt64 = 0
  var countCheckQueued = false
  var byteCheckQueued = false

  public init(store: FollowStore) {
    self.store = store
    source = store.capabilities.lists
  }

  /// Whether a list in memory holds the entity (it must then stay in memory too).
  public func holds(_ entity: EntityKey) -> Bool { containing[entity] != nil }

  public var listCount: Int { entries.count }

  /// The list's state now; an idle one when it was never asked for (nil when the
  /// backend has no such list).
  public func snapshot(_ key: ListKey, params: [String: String] = [:]) -> Snapshot? {
    guard let entry = entry(key, params: params) else { return nil }
    return snapshot(key, entry)
  }

  /// `fetchList`: loads the page asked for, or answers from what is loaded, or joins
  /// the page already on its way. `completion` gets the list's state after it (a
  /// failed page is a state with `phase == .failure`). Returns false, calling
  /// nothing, when the backend has no such list.
  @discardableResult
  public func fetch(
    _ key: ListKey, params: [String: String] = [:], page: PageRequest, completion: @escaping (Snapshot) -> Void
  ) -> Bool {
    guard let entry = entry(key, params: params) else { return false }
    if entry.loading != nil {
      counters.sharedFetches += 1
      entry.waiters.append(completion)
      return true
    }
    // Each call may walk the list again once (see `shiftDetected`).
    entry.rewalked = false
    switch page {
    case .first where entry.phase == .loaded && !entry.stale,
      .first where entry.phase == .failure && !entry.items.isEmpty,
      .next where entry.phase != .idle && !entry.hasMore && !entry.stale:
      completion(snapshot(key, entry))
      return true
    case .first, .refresh:
      load(key, entry, as: entry.phase == .idle ? .first : .refresh, from: nil)
    case .next:
      if entry.phase == .idle || entry.stale {
        load(key, entry, as: entry.phase == .idle ? .first : .refresh, from: nil)
      } else {
        load(key, entry, as: .next, from: entry.next)
      }
    }
    entry.waiters.append(completion)
    return true
  }

  /// Starts the first page of a list nobody loaded yet (a subscription to it).
  public func loadIfIdle(_ key: ListKey, params: [String: String] = [:]) {
    guard let entry = entry(key, params: params), entry.phase == .idle, entry.loading == nil else { return }
    load(key, entry, as: .first, from: nil)
  }

  // MARK: The join

  /// An entity's state changed: every loaded list holding it shows the change.
  public func entityChanged(_ key: EntityKey) {
    guard let lists = containing[key] else { return }
    for listKey in lists {
      guard let entry = entries[listKey] else { continue }
      entry.version = store.versions.next()
      onChange?(listKey)
    }
  }

  /// A follow or unfollow was confirmed: lists that depend on its kind are out of
  /// date; those someone listens to are fetched again.
  public func mutationConfirmed(_ key: EntityKey) {
    invalidate { $0.description.dependsOn.contains(key.kind) }
  }

  /// Another environment is active: what every list holds was fetched in the old one
  /// (see `startOver`).
  public func environmentChanged() {
    startOver { _ in true }
  }

  /// Values the lists of these names were fetched through changed (`{me}` in a path:
  /// another account's list): see `startOver`.
  public func valuesChanged(_ names: Set<String>) {
    guard !names.isEmpty else { return }
    startOver { names.contains($0.name) }
  }

  /// Nothing a list held is shown again, not even while it is fetched anew (unlike
  /// an out-of-date list, which keeps its items meanwhile): each affected list is idle
  /// again, a page on its way is not read when it comes, and one that was loading,
  /// has callers waiting or someone listening is fetched from its first page now.
  private func startOver(where isAffected: (ListKey) -> Bool) {
    for (key, entry) in entries where isAffected(key) && (entry.phase != .idle || entry.loading != nil) {
      let reload = entry.loading != nil || !entry.waiters.isEmpty || hasSubscribers?(key) == true
      entry.loading = nil
      entry.loadSerial &+= 1
      for item in entry.items { unindex(item.key, from: key) }
      entry.items = []
      store.heldBytes.listChanged(by: -entry.itemBytes)
      entry.itemBytes = 0
      entry.next = nil
      entry.hasMore = true
      entry.error = nil
      entry.stale = false
      entry.refill = nil
      entry.refillTarget = 0
      entry.refillPages = 0
      entry.refillTokens = []
      entry.refillKeys = []
      entry.pages = 0
      entry.tokens = []
      entry.lastPage = []
      entry.total = nil
      entry.lastItem = nil
      entry.rewalked = false
      entry.shifted = nil
      entry.phase = .idle
      entry.version = store.versions.next()
      if reload {
        load(key, entry, as: .first, from: nil)
      } else {
        onChange?(key)
      }
    }
  }

  private func invalidate(where isAffected: (Entry) -> Bool) {
    for (listKey, entry) in entries where isAffected(entry) && entry.phase != .idle {
      counters.invalidations += 1
      entry.stale = true
      if entry.loading == nil, hasSubscribers?(listKey) == true {
        entry.refill = []
        entry.refillTarget = entry.items.count
        load(listKey, entry, as: .refresh, from: nil)
      }
    }
  }

  // MARK: Loading

  /// Every use of a list comes here: it counts as one (see `eviction`).
  private func entry(_ key: ListKey, params: [String: String]) -> Entry? {
    if let existing = entries[key] {
      existing.touched = evictionClock.tick
      return existing
    }
    guard let description = source?.listDescription(key.name) else { return nil }
    let created = Entry(description: description, params: params)
    created.version = versionFloor
    created.touched = evictionClock.tick
    entries[key] = created
    keepBounded()
    return created
  }

  private func snapshot(_ key: ListKey, _ entry: Entry) -> Snapshot {
    Snapshot(
      key: key, phase: entry.phase, items: entry.items, hasMore: entry.phase == .idle ? true : entry.hasMore,
      error: entry.error, version: store.versions.base &+ entry.version)
  }

  func load(_ key: ListKey, _ entry: Entry, as request: PageRequest, from token: PageToken?) {
    entry.loading = request
    if entry.refill != nil, token == nil {
      entry.refillPages = 0
      entry.refillTokens = []
      entry.refillKeys = []
    }
    if entry.phase != .loading {
      entry.phase = .loading
      entry.version = store.versions.next()
      onChange?(key)
    }
    counters.pageCalls += 1
    entry.loadSerial &+= 1
    let serial = entry.loadSerial
    source?.fetchListPage(ListPageRequest(key: key, params: entry.params, page: token)) { [weak self] result in
      guard entry.loadSerial == serial else { return }
      self?.pageReturned(key, entry, request, token, result)
    }
  }

  private func pageReturned(
    _ key: ListKey, _ entry: Entry, _ request: PageRequest, _ token: PageToken?,
    _ result: Result<ListPage, FollowFailure>
  ) {
    guard entries[key] === entry else { return }
    entry.loading = nil
    entry.answeredAt = store.loop.clock.now
    switch result {
    case .success(let page):
      if let problem = overBound(key, page) { return failed(key, entry, problem) }
      guard var refill = entry.refill else {
        guard request == .next else {
          answered(entry, page)
          return pageArrived(key, entry, request, token, page)
        }
        if let problem = noProgress(key, entry, page, token) { return failed(key, entry, problem) }
        let unseen = Self.unseen(page, after: entry.items)
        if let reason = movement(entry, page, repeats: unseen.repeats),
          shiftDetected(key, entry, page, reason: reason, repeats: unseen.repeats)
        {
          return
        }
        answered(entry, page)
        return pageArrived(key, entry, request, token, unseen.page)
      }
      if let problem = refillProblem(key, entry, page, token) { return failed(key, entry, problem) }
      let unseen = Self.unseen(page, after: refill)
      // The refetch's first page starts it: only the pages after it can have moved.
      if token != nil, let reason = movement(entry, page, repeats: unseen.repeats),
        shiftDetected(key, entry, page, reason: reason, repeats: unseen.repeats)
      {
        return
      }
      answered(entry, page)
      entry.lastPage = page.items.map(\.key)
      refill += unseen.page.items
      if refill.count < entry.refillTarget, let next = page.next {
        if let problem = refillNextProblem(key, entry, next) { return failed(key, entry, problem) }
        entry.refill = refill
        load(key, entry, as: .next, from: next)
        return
      }
      entry.refill = nil
      let pages = entry.refillPages
      let tokens = entry.refillTokens
      pageArrived(key, entry, .refresh, nil, ListPage(items: refill, next: page.next))
      entry.pages = pages
      entry.tokens = tokens
      entry.lastPage = page.items.map(\.key)
    case .failure(let failure):
      failed(key, entry, failure)
    }
  }

  /// What was loaded stays, and `hasMore` too: a failure never completes a list.
  private func failed(_ key: ListKey, _ entry: Entry, _ failure: FollowFailure) {
    entry.refill = nil
    entry.refillKeys = []
    entry.refillTokens = []
    entry.phase = .failure
    entry.error = failure
    finish(key, entry)
  }

  private func pageArrived(
    _ key: ListKey, _ entry: Entry, _ request: PageRequest, _ token: PageToken?, _ page: ListPage
  ) {
    let pageBytes = HeldBytes.of(page.items)
    if request == .next {
      entry.items += page.items
      entry.itemBytes += pageBytes
      store.heldBytes.listChanged(by: pageBytes)
      entry.pages += 1
      if let token { entry.tokens.insert(token) }
    } else {
      for item in entry.items { unindex(item.key, from: key) }
      entry.items = page.items
      store.heldBytes.listChanged(by: pageBytes - entry.itemBytes)
      entry.itemBytes = pageBytes
      entry.stale = false
      entry.pages = 1
      entry.tokens = []
    }
    for item in page.items { containing[item.key, default: []].insert(key) }
    entry.lastPage = page.items.map(\.key)
    entry.next = page.next
    entry.hasMore = page.next != nil
    entry.phase = .loaded
    entry.error = nil
    // The list's answer is news of each item's follow state.
    for item in page.items {
      if let following = item.following { store.observe(item.key, following: following) }
      if let attributes = item.attributes, store.state(item.key).attributes == nil {
        store.setAttributes(item.key, attributes)
      }
    }
    finish(key, entry)
    keepBytesBounded()
  }

  private func finish(_ key: ListKey, _ entry: Entry) {
    entry.version = store.versions.next()
    onChange?(key)
    let current = snapshot(key, entry)
    let waiters = entry.waiters
    entry.waiters = []
    for waiter in waiters { waiter(current) }
  }

  private func unindex(_ entity: EntityKey, from list: ListKey) {
    guard var lists = containing[entity] else { return }
    lists.remove(list)
    containing[entity] = lists.isEmpty ? nil : lists
  }
}
