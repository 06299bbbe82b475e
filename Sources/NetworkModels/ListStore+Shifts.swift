import Posix

/// Lists whose head moves between two pages: a page- or offset-paged API counts from
/// the head, so items added there push the tail of the page shown into the next one
/// (repeats), and items removed pull unseen items into the page already walked
/// (skips). A next page that repeats an item the list shows is the sign: its repeats
/// are never shown, and the list is walked again from its first page, as far as it
/// reached, so nothing the move hid stays hidden.
extension ListStore {
  /// The page without the items the list already holds (ids by bytes, `EntityKey ==`).
  static func unseen(_ page: ListPage, after items: [ListItem]) -> (page: ListPage, repeats: Int) {
    var seen = Set(items.map(\.key))
    var kept: [ListItem] = []
    kept.reserveCapacity(page.items.count)
    for item in page.items where seen.insert(item.key).inserted { kept.append(item) }
    return (ListPage(items: kept, next: page.next), page.items.count - kept.count)
  }

  /// A next page that repeats items: once per walk the list is walked again (its
  /// items stay shown meanwhile); a re-walk that meets a move again only drops the
  /// repeats, so a list that moves all the time still ends.
  func shiftDetected(_ key: ListKey, _ entry: Entry, _ page: ListPage, repeats: Int) -> Bool {
    counters.shifts += 1
    let rewalk = !entry.rewalked
    let reason = "the next page holds \(repeats) of \(page.items.count) items the list already shows"
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
    entry.rewalked = true
    entry.refill = []
    entry.refillTarget = entry.items.count + page.items.count - repeats
    load(key, entry, as: .refresh, from: nil)
    return true
  }
}
