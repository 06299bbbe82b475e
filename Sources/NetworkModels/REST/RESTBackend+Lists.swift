import EventLoop
import HTTP
import JSON

// MARK: Lists and details

extension RESTBackend {
  public func listDescription(_ name: String) -> ListDescription? {
    guard let list = configuration.lists[name] else { return nil }
    return ListDescription(dependsOn: list.dependsOn, requiredParams: list.params)
  }

  public var listNames: [String] { Array(configuration.lists.keys) }

  public func fetchListPage(
    _ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void
  ) {
    guard let list = configuration.lists[request.key.name] else {
      return loop.execute { completion(.failure(FollowFailure(.unknownKind, "no list \(request.key.name)"))) }
    }
    if let problem = validatePlaceholders(list: request.key.name, params: request.params) {
      return unsendable(problem, completion)
    }
    if let unset = unsetValue(list.endpoint) { return unsendable(unset, completion) }
    var http = self.request(list.endpoint, values: request.params)
    var extra: [(String, String)] = []
    switch (list.paging, request.page) {
    case (.page(let pageParameter, let sizeParameter, let size, let first), let token):
      var number = first
      if case .number(let next)? = token { number = next }
      extra = [(pageParameter, String(number)), (sizeParameter, String(size))]
    case (.offset(let offsetParameter, let limitParameter, let limit), let token):
      var offset = 0
      if case .offset(let next)? = token { offset = next }
      extra = [(offsetParameter, String(offset)), (limitParameter, String(limit))]
    case (.cursor(let parameter, _, let sizeParameter, let size), let token):
      if case .cursor(let cursor)? = token { extra.append((parameter, cursor)) }
      if let sizeParameter, let size { extra.append((sizeParameter, String(size))) }
    case (.link, .url(let url)?):
      guard Self.sameOrigin(url, http.url) else {
        let message =
          "the next page of \(request.key) is on another origin (\(url)): not followed, the token stays home"
        return loop.execute { completion(.failure(FollowFailure(.rejected(status: 0), message))) }
      }
      http.url = url
    case (.connection(let after, let first, let size, _), let token):
      var variables: [(String, JSON)] = []
      if case .cursor(let cursor)? = token { variables.append((after, .string(cursor))) }
      if let first, let size { variables.append((first, .integer(size))) }
      if case .graphql(let graphql)? = list.endpoint.body {
        http.body = graphql.encoded(request.params, ids: [], extra: variables)
      }
    case (.none, _), (.link, _):
      break
    }
    if !extra.isEmpty {
      // Values from the answer, not templates: a cursor's "}}" is sent as it came.
      let query = extra.map { Template.percentEncode($0.0, keep: "[]") + "=" + Template.percentEncode($0.1) }
        .joined(separator: "&")
      http.url += (http.url.contains("?") ? "&" : "?") + query
    }
    count("list", request.key.name)
    let world = self.world
    self.send(http, list.endpoint) { [weak self] result in
      guard let self else { return }
      // A page of the old world is not this one's: asked again with the new token or
      // values (the list store starts over a list a changed value or environment reached).
      guard self.world == world else {
        return self.answeredInOldWorld(world, completion) { self.fetchListPage(request, completion: completion) }
      }
      completion(
        self.answer(result, list.endpoint) { response in
          RESTBackend.readPage(response, list, request.page, url: http.url)
        })
    }
  }

  public func hasDetail(kind: String) -> Bool { configuration.kinds[kind]?.detail != nil }

  public func fetchDetail(_ key: EntityKey, completion: @escaping (Result<String, FollowFailure>) -> Void) {
    _ = fetchDetail(key, priority: .user, completion: completion)
  }

  public func fetchDetail(
    _ key: EntityKey, priority: HTTPPriority, completion: @escaping (Result<String, FollowFailure>) -> Void
  ) -> PendingCall? {
    guard let detail = configuration.kinds[key.kind]?.detail else {
      loop.execute { completion(.failure(FollowFailure(.unknownKind, "\(key.kind) has no detail endpoint"))) }
      return nil
    }
    if let problem = validatePlaceholders(kind: key.kind, id: key.id) {
      unsendable(problem, completion)
      return nil
    }
    if let unset = unsetValue(detail) {
      unsendable(unset, completion)
      return nil
    }
    count(key.kind, "detail")
    let world = self.world
    let ticket = send(request(detail, kind: key.kind, id: key.id), detail, priority: priority) { [weak self] result in
      guard let self else { return }
      // Nothing keeps details by environment: the detail is asked for again in this one.
      guard self.world == world else {
        return self.answeredInOldWorld(world, acrossEnvironments: true, completion) {
          _ = self.fetchDetail(key, priority: priority, completion: completion)
        }
      }
      completion(
        self.answer(result, detail) { response -> Result<String, FollowFailure> in
          guard let json = try? JSON.parse(response.body),
            let object = json.value(at: detail.attributes ?? .root), object.isObject
          else {
            return .failure(FollowFailure(.unavailable, "the detail answer of \(key) has no object"))
          }
          return .success(String(decoding: object.encoded(), as: UTF8.self))
        })
    }
    // A call given up before it went out was never made: `calls` counts what the API saw.
    return PendingCall(
      cancel: { [weak self] in
        guard let self, self.http.cancel(ticket) else { return false }
        self.count(key.kind, "detail", -1)
        return true
      },
      setPriority: { [weak self] in _ = self?.http.setPriority(ticket, $0) })
  }

  static func readPage(
    _ response: HTTPResponse, _ list: RESTConfiguration.ListEndpoints, _ token: PageToken?, url: String = ""
  ) -> Result<ListPage, FollowFailure> {
    guard let json = try? JSON.parse(response.body), let array = json.value(at: list.items), array.isArray else {
      return .failure(FollowFailure(.unavailable, "the list answer has no array at \(list.items)"))
    }
    var items: [ListItem] = []
    for element in array.elements {
      guard let idValue = element.value(at: list.item.id),
        let id = idValue.string ?? idValue.integer.map({ String($0) }),
        EntityKey.problem(kind: list.item.kind, id: id) == nil
      else { continue }
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
      items.append(item)
    }
    var next: PageToken?
    switch list.paging {
    case .none: next = nil
    case .page(_, _, let size, let first):
      var number = first
      if case .number(let current)? = token { number = current }
      next = array.count >= size ? .number(number + 1) : nil
    case .offset(_, _, let limit):
      var offset = 0
      if case .offset(let current)? = token { offset = current }
      next = array.count >= limit ? .offset(offset + array.count) : nil
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
    return .success(ListPage(items: items, next: next))
  }

  /// The URL of `rel="next"` in an RFC 8288 Link header: `<URL>; rel="next"` entries
  /// separated by commas (a URL may hold commas: it ends at its `>`); `rel` may list
  /// several relations. A relative URL is resolved against `base`.
  public static func nextLink(_ header: String, base: String = "") -> String? {
    var rest = Substring(header)
    while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
      let target = String(rest[rest.index(after: open)..<close])
      let parametersEnd = rest[close...].firstIndex(of: "<") ?? rest.endIndex
      let parameters = rest[rest.index(after: close)..<parametersEnd]
      rest = rest[parametersEnd...]
      for parameter in parameters.split(separator: ";") {
        let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: " ,\t\"") }
        guard pair.count == 2, pair[0].lowercased() == "rel" else { continue }
        if pair[1].split(separator: " ").contains(where: { $0.lowercased() == "next" }) {
          return resolve(target, against: base)
        }
      }
    }
    return nil
  }

  /// An absolute URL as it is; `/path` on the base's origin; anything else after the
  /// base's last `/`.
  static func resolve(_ reference: String, against base: String) -> String {
    if reference.hasPrefix("http://") || reference.hasPrefix("https://") || base.isEmpty { return reference }
    let schemeEnd = afterScheme(base)
    let originEnd = base[schemeEnd...].firstIndex(of: "/") ?? base.endIndex
    if reference.hasPrefix("/") { return String(base[..<originEnd]) + reference }
    let folderEnd = base[originEnd...].lastIndex(of: "/").map { base.index(after: $0) } ?? base.endIndex
    return String(base[..<folderEnd]) + (folderEnd == base.endIndex && !base.hasSuffix("/") ? "/" : "") + reference
  }

  /// Where the host starts: after `scheme://` (the start when there is none).
  static func afterScheme(_ text: String) -> String.Index {
    var index = text.startIndex
    while index < text.endIndex {
      if text[index...].hasPrefix("://") { return text.index(index, offsetBy: 3) }
      index = text.index(after: index)
    }
    return text.startIndex
  }

  /// Whether `url` is on the origin of `base` (scheme, host and port): the auth header
  /// must not follow a Link to another host.
  static func sameOrigin(_ url: String, _ base: String) -> Bool {
    func origin(_ text: String) -> Substring {
      let schemeEnd = afterScheme(text)
      return text[..<(text[schemeEnd...].firstIndex(of: "/") ?? text.endIndex)]
    }
    return origin(url).lowercased() == origin(base).lowercased()
  }
}

extension StringProtocol {
  fileprivate func trimmingCharacters(in characters: String) -> String {
    var slice = Substring(self)
    while let first = slice.first, characters.contains(first) { slice.removeFirst() }
    while let last = slice.last, characters.contains(last) { slice.removeLast() }
    return String(slice)
  }
}
