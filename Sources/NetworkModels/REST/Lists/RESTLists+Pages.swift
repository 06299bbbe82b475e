import HTTP
import JSON

/// What a list's answer holds: its items, and where the next page is.
extension RESTLists {
  static func readPage(
    _ response: HTTPResponse, _ list: RESTConfiguration.ListEndpoints, _ token: PageToken?, url: String = ""
  ) -> Result<ListPage, FollowFailure> {
    guard let json = try? JSON.parse(response.body), let array = json.value(at: list.items), array.isArray else {
      return .failure(FollowFailure(.unavailable, "the list answer has no array at \(list.items)"))
    }
    var offset = 0
    if case .offset(let current)? = token { offset = current }
    var overlapped = false
    if case .offset(_, _, _, let overlap) = list.paging { overlapped = asked(offset, overlap: overlap) < offset }
    var items: [ListItem] = []
    var overlap: ListPage.Overlap?
    for element in array.elements {
      if overlapped, overlap == nil {
        overlap = item(element, list).map { .item($0.key) } ?? .absent
        continue
      }
      guard let item = item(element, list) else { continue }
      items.append(item)
    }
    if overlapped, overlap == nil { overlap = .absent }
    var next: PageToken?
    switch list.paging {
    case .none: next = nil
    case .page(_, _, let size, let first):
      var number = first
      if case .number(let current)? = token { number = current }
      next = array.count >= size ? .number(number + 1) : nil
    case .offset(_, _, let limit, let overlap):
      next = array.count >= limit ? .offset(asked(offset, overlap: overlap) + array.count) : nil
    case .cursor(_, let pointer, _, _):
      if let cursor = json.value(at: pointer), let text = cursor.string ?? cursor.integer.map({ String($0) }),
        !text.isEmpty
      {
        next = .cursor(text)
      }
    case .link:
      next = response.header("Link").flatMap { Self.nextLink($0, base: url) }.map { .url($0) }
    case .connection(_, _, _, let pageInfo):
      switch nextCursor(json, pageInfo) {
      case .success(let cursor): next = cursor.map { .cursor($0) }
      case .failure(let failure): return .failure(failure)
      }
    }
    // A total that is no count is not compared: it says nothing of a move.
    let total = list.total.flatMap { json.value(at: $0)?.integer }.flatMap { $0 >= 0 ? Int(exactly: $0) : nil }
    return .success(ListPage(items: items, next: next, total: total, overlap: overlap))
  }

  /// The offset a page starting at `offset` is asked from: one before with `overlap`
  /// (the item there is the check that nothing before it moved), except the first.
  static func asked(_ offset: Int, overlap: Bool) -> Int { overlap && offset > 0 ? offset - 1 : offset }

  /// One element of the answer's array as an item; nil when it has no usable id.
  static func item(_ element: JSON, _ list: RESTConfiguration.ListEndpoints) -> ListItem? {
    guard let idValue = element.value(at: list.item.id),
      let id = idValue.string ?? idValue.integer.map({ String($0) }),
      EntityKey.problem(kind: list.item.kind, id: id) == nil
    else { return nil }
    var item = ListItem(key: EntityKey(kind: list.item.kind, id: id))
    switch list.item.following {
    case .unknown: break
    case .always: item.following = true
    case .pointer(let pointer): item.following = element.value(at: pointer)?.bool
    }
    if let pointer = list.item.attributes, let object = element.value(at: pointer), object.isObject {
      let kept: JSON
      if let keep = list.item.keep {
        kept = JSON.object()
        for field in keep { if let value = object[field] { kept.set(field, value) } }
      } else {
        kept = object
      }
      item.attributes = String(decoding: kept.encoded(), as: UTF8.self)
    }
    if let sections = list.sections, let value = element.value(at: sections.pointer)?.string {
      switch sections.by {
      case .value: item.sectionTitle = value
      case .firstLetter:
        let first = value.first.map { String($0).uppercased() } ?? "#"
        item.sectionTitle = first.unicodeScalars.allSatisfy(\.properties.isAlphabetic) ? first : "#"
      }
    }
    return item
  }

  /// The next page's cursor from a connection's `pageInfo`, nil at the end. A
  /// `pageInfo` that does not say whether there is a next page, or says there is one
  /// but not where, fails the page: guessing "the end" would hide the rest of the
  /// list, guessing "more" would ask for the same page again.
  static func nextCursor(_ json: JSON, _ pageInfo: JSONPointer) -> Result<String?, FollowFailure> {
    guard let info = json.value(at: pageInfo), info.isObject else {
      return .failure(FollowFailure(.unavailable, "the list answer has no pageInfo object at \(pageInfo)"))
    }
    guard let hasNext = info["hasNextPage"]?.bool else {
      return .failure(FollowFailure(.unavailable, "the list answer has no true or false at \(pageInfo)/hasNextPage"))
    }
    guard hasNext else { return .success(nil) }
    guard let cursor = info["endCursor"]?.string, !cursor.isEmpty else {
      return .failure(
        FollowFailure(.unavailable, "the list answer says hasNextPage but has no endCursor at \(pageInfo)/endCursor"))
    }
    return .success(cursor)
  }
}
