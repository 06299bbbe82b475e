import Posix

/// Lists whose head moves between two pages: a page- or offset-paged API counts from
/// the head, so items added there push the tail of the page shown into the next one
/// (repeats), and items removed pull unseen items into the page already walked
/// (skips). A next page says so where it can: it repeats an item the list shows, the
/// list's total (`total`) differs from the previous page's, or the item an overlapping
/// page starts with (`overlap`) is not the last one read. Repeats are never shown, and
/// the list is walked again from its first page, as far as it reached, so nothing the
/// move hid stays hidden. A keyset cursor (an id to go on after) does not move.
extension ListStore {
  /// The page without the items the list already holds (ids by bytes, `EntityKey ==`).
  static func unseen(_ page: ListPage, after items: [ListItem]) -> (page: ListPage, repeats: Int) {
    var seen = Set(items.map(\.key))
    var kept: [ListItem] = []
    kept.reserveCapacity(page.items.count)
    for item in page.items where seen.insert(item.key).inserted { kept.append(item) }
    return (
      ListPage(items: kept, next: page.next, total: page.total, overlap: page.overlap), page.items.count - kept.count
    )
  }

  /// What a page read is the check of the next one against.
  func answered(_ entry: Entry, _ page: ListPage) {
    entry.total = page.total
    if let last = page.items.last { entry.lastItem = last.key }
  }

  /// Why a next page shows that the list moved since the page before it, in words;
  /// nil when nothing says so.
  func movement(_ entry: Entry, _ page: ListPage, repeats: Int) -> String? {
    var signs: [String] = []
    if repeats > 0 {
      signs.append("the next page holds \(repeats) of \(page.items.count) items the list already shows")
    }
    if let before = entry.total, let total = page.total, before != total {
      signs.append("the list's total went from \(before) to \(total)")
    }
    switch page.overlap {
    case .item(let key)? where key != entry.lastItem:
      signs.append(
        "the next page starts after \(Self.shown(key)), not after \(entry.lastItem.map { Self.shown($0) } ?? "the last item read")"
      )
    case .absent?:
      signs.append("the item before the next page is gone: the list is shorter than it was")
    case .item?, nil:
      break
    }
    return signs.isEmpty ? nil : signs.joined(separator: "; ")
  }

  static func shown(_ key: EntityKey) -> String { "\"\(key.id.prefix(100))\"" }

  /// A next page that shows a move: once per walk the list is walked again (its items
  /// stay shown meanwhile); a re-walk that meets a move again only drops the repeats,
  /// so a list that moves all the time still ends.
  func shiftDetected(_ key: ListKey, _ entry: Entry, _ page: ListPage, reason: String, repeats: Int) -> Bool {
    counters.shifts += 1
    let rewalk = !entry.rewalked
    entry.shifted =
      reason + (rewalk ? ": walked again from the first page" : ": left out (it moved again while walked again)")
    Log.event(
      .warn, "list.shifted",
      rewalk
        ? "a list moved while it was paged: walking it again from its first page"
        : "a list moved again while it was walked again: its repeated items are left out",
      [
        .init("list", key.name), .init("params", key.paramsText),
        .init("reason", reason),
      ])
    guard rewalk else { return false }
    // As far as the list reached, and at least one item further: the page asked for
    // was a next one, even when all it held was already shown.
    let target = entry.items.count + max(page.items.count - repeats, 1)
    entry.rewalked = true
    entry.refillTarget = max(target, entry.refill == nil ? 0 : entry.refillTarget)
    entry.refill = []
    load(key, entry, as: .refresh, from: nil)
    return true
  }
}
