import EventLoop
import HTTP
import JSON
import Posix

/// Follows over HTTP, as a `RESTConfiguration` describes each kind's endpoints.
/// Reads of a kind whose state endpoint takes many ids are batched (DataLoader):
/// the first read waits `windowMs` for others, up to `maxIds`, then one call answers
/// them all.
///
/// Must be used on the loop's thread.
public final class RESTBackend: ModelBackend, ListSource, DetailSource, ConfigurableBackend, AttributeSource,
  PrioritisedBackend, BackendStatistics
{
  public typealias Completion = (Result<Bool, FollowFailure>) -> Void

  public let configuration: RESTConfiguration
  public let http: HTTPClient
  public private(set) var environment: String
  public var onAttributes: ((EntityKey, String) -> Void)?
  public var readPriority = HTTPPriority.user
  /// Calls made per kind and endpoint (`artist.state`), for `stats` and tests.
  public var calls: [String: Int] {
    Dictionary(uniqueKeysWithValues: callCounts.map { ("\($0.key.kind).\($0.key.endpoint)", $0.value) })
  }
  private var callCounts: [CallKey: Int] = [:]
  private var authToken: String?
  private var batches: [String: PendingBatch] = [:]
  /// Each kind's state read, boxed once: a read borrows it, where copying the kind's
  /// `KindEndpoints` out of the configuration retained every string and table of
  /// its endpoints, for every read.
  private let stateReads: [String: StateRead]
  var loop: EventLoop { http.loop }

  private final class StateRead {
    let state: RESTConfiguration.StateEndpoint
    init(_ state: RESTConfiguration.StateEndpoint) { self.state = state }
  }

  /// Reads of one kind waiting to go out as one call.
  private final class PendingBatch {
    var ids: [String] = []
    var waiters: [String: [Completion]] = [:]
    var timer: EventLoop.TimerID?
    var priority = HTTPPriority.preload
  }

  /// `environmentVariables` is where `auth.tokenEnv` is looked up (tests pass their own).
  public init(
    configuration: RESTConfiguration, loop: EventLoop, environment: String? = nil,
    environmentVariables: (String) -> String? = Process.environment
  ) {
    self.configuration = configuration
    stateReads = configuration.kinds.mapValues { StateRead($0.state) }
    self.environment = environment ?? configuration.defaultEnvironment
    http = HTTPClient(loop: loop, maxConnections: configuration.maxInFlight)
    if let name = configuration.auth?.tokenEnvironmentVariable, let token = environmentVariables(name), !token.isEmpty {
      authToken = token
    }
  }

  // MARK: ConfigurableBackend

  public var environmentNames: [String] { configuration.environments.map(\.name) }

  public func selectEnvironment(_ name: String) -> Bool {
    guard configuration.baseURL(of: name) != nil else { return false }
    environment = name
    return true
  }

  /// A token with a line break would add a header of its own: it is refused (no token).
  public func setAuthToken(_ token: String?) {
    authToken = token.flatMap { $0.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) ? nil : $0 }
  }

  // MARK: ModelBackend

  public func setFollowing(_ key: EntityKey, _ following: Bool, completion: @escaping Completion) {
    guard let kind = configuration.kinds[key.kind] else { return unknownKind(key.kind, completion) }
    if let problem = validatePlaceholders(kind: key.kind, id: key.id) { return unsendable(problem, completion) }
    let endpoint = following ? kind.follow : kind.unfollow
    count(key.kind, following ? "follow" : "unfollow")
    http.send(request(endpoint, kind: key.kind, id: key.id)) { [weak self] result in
      guard let self else { return }
      // The configuration lets a follow's statuses mean only "done" or "following"
      // (an unfollow's "done" or "notFollowing"): each is the change confirmed.
      completion(
        Self.outcome(result, endpoint, meaning: { _ in .success(following) }) {
          response -> Result<Bool, FollowFailure> in
          if let pointer = endpoint.attributes, (200...299).contains(response.status) {
            self.reportAttributes(key, response, pointer)
          }
          return .success(following)
        })
    }
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping Completion) {
    guard let read = stateReads[key.kind] else { return unknownKind(key.kind, completion) }
    if let problem = validatePlaceholders(kind: key.kind, id: key.id) { return unsendable(problem, completion) }
    if let batch = read.state.batch {
      enqueue(key, batch, completion)
      return
    }
    count(key.kind, "state")
    http.send(request(read.state.endpoint, kind: key.kind, id: key.id), priority: readPriority) {
      [weak self] result in
      guard let self else { return }
      completion(
        Self.outcome(result, read.state.endpoint, meaning: { .success($0 == .following) }) { response in
          Self.following(in: response, read.state.following)
        })
    }
  }

  public var capabilities: BackendCapabilities {
    BackendCapabilities(
      lists: self, details: self, attributes: self, environments: self, placeholders: self, prioritised: self,
      statistics: self)
  }

  public var httpStatistics: HTTPStatistics {
    HTTPStatistics(counters: http.counters, inFlight: http.inFlight, callsByEndpoint: calls)
  }

  // MARK: Batching

  private func enqueue(_ key: EntityKey, _ batch: RESTConfiguration.Batch, _ completion: @escaping Completion) {
    let pending = batches[key.kind] ?? PendingBatch()
    batches[key.kind] = pending
    if pending.waiters[key.id] == nil { pending.ids.append(key.id) }
    pending.waiters[key.id, default: []].append(completion)
    pending.priority = max(pending.priority, readPriority)
    if pending.ids.count >= batch.maxIds {
      flush(kind: key.kind)
    } else if pending.timer == nil {
      pending.timer = loop.schedule(after: .milliseconds(batch.windowMs)) { [weak self] in
        self?.flush(kind: key.kind)
      }
    }
  }

  private func flush(kind: String) {
    guard let pending = batches.removeValue(forKey: kind), let endpoints = configuration.kinds[kind],
      let batch = endpoints.state.batch
    else { return }
    if let timer = pending.timer { loop.cancel(timer) }
    let state = endpoints.state.endpoint
    count(kind, "state")
    http.send(request(state, kind: kind, ids: pending.ids), priority: pending.priority) { [weak self] result in
      guard let self else { return }
      // A status meaning answers for every id of the call: Artsy's batched check
      // answers 404 when none of them is followed (see examples/artsy/ENDPOINTS.md).
      let followed = Self.outcome(
        result, state, meaning: { $0 == .following ? .success(Set(pending.ids)) : .success([]) }
      ) { response in Self.followedIDs(in: response, batch) }
      for id in pending.ids {
        let answer = followed.map { set in set.contains(id) }
        for waiter in pending.waiters[id] ?? [] { waiter(answer) }
      }
    }
  }

  // MARK: Requests

  /// The HTTP request of `endpoint` for `id` (or `ids`, batched), in the current environment.
  public func request(_ endpoint: RESTConfiguration.Endpoint, kind: String, id: String? = nil, ids: [String] = [])
    -> HTTPRequest
  {
    // Made whole: adding "id" to a one-entry dictionary would grow and rehash it, for
    // every request.
    let values = id.map { ["kind": kind, "id": $0] } ?? ["kind": kind]
    return request(endpoint, values: values, ids: ids)
  }

  /// The HTTP request of `endpoint` with its placeholders filled from `values`.
  func request(_ endpoint: RESTConfiguration.Endpoint, values: [String: String], ids: [String] = []) -> HTTPRequest {
    let base = configuration.baseURL(of: environment) ?? configuration.environments[0].baseURL
    var url = base + Template.fill(endpoint.path, values, encode: { Template.percentEncode($0) })
    let query = Template.encodeParameters(endpoint.query, values, ids: ids)
    if !query.isEmpty { url += (url.contains("?") ? "&" : "?") + query }
    var headers = configuration.headers + endpoint.headers
    var body: [UInt8]?
    switch endpoint.body {
    case .json(let template):
      body = Template.fill(json: template, values, ids: ids).encoded()
      headers.append(("Content-Type", "application/json"))
    case .form(let fields):
      body = Array(Template.encodeParameters(fields, values, ids: ids).utf8)
      headers.append(("Content-Type", "application/x-www-form-urlencoded"))
    case nil:
      break
    }
    if let auth = configuration.auth, let authToken {
      headers.append((auth.header, auth.scheme.map { "\($0) \(authToken)" } ?? authToken))
    }
    return HTTPRequest(
      method: endpoint.method, url: url, headers: headers, body: body,
      timeout: .milliseconds(endpoint.timeoutMs ?? configuration.timeoutMs),
      connectTimeout: .milliseconds(configuration.connectTimeoutMs))
  }

  // MARK: Answers

  /// A transport error or a status the endpoint gives no meaning to becomes a
  /// failure; a status it names goes to `meaning`, a 2xx to `success`. The
  /// configuration only gives an endpoint meanings its `meaning` can answer, and
  /// details and lists none (they pass no `meaning`), so no configured status fails.
  static func outcome<T>(
    _ result: Result<HTTPResponse, HTTPError>, _ endpoint: RESTConfiguration.Endpoint,
    meaning: ((RESTConfiguration.StatusMeaning) -> Result<T, FollowFailure>)? = nil,
    success: (HTTPResponse) -> Result<T, FollowFailure>
  ) -> Result<T, FollowFailure> {
    switch result {
    case .failure(let error):
      return .failure(FollowFailure(.unavailable, error.message))
    case .success(let response):
      if let meaning, let named = endpoint.statusMeanings[response.status] { return meaning(named) }
      if (200...299).contains(response.status) { return success(response) }
      return .failure(Self.failure(response, endpoint))
    }
  }

  static func failure(_ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint) -> FollowFailure {
    let status = response.status
    var message = "HTTP \(status) from \(endpoint.method) \(endpoint.path)"
    // Most APIs say why in {"error": "..."} or {"message": "..."}: worth showing a user.
    if let json = try? JSON.parse(response.body),
      let reason = json["error"]?.string ?? json["message"]?.string ?? json["error"]?["message"]?.string,
      !reason.isEmpty
    {
      message += ": " + String(reason.prefix(200))
    }
    switch status {
    case 401, 403: return FollowFailure(.unauthorized(status: status), message)
    case 408, 429, 500...599: return FollowFailure(.unavailable, message, retryAfter: response.retryAfter)
    default: return FollowFailure(.rejected(status: status), message)
    }
  }

  static func following(in response: HTTPResponse, _ rule: RESTConfiguration.FollowingRule) -> Result<
    Bool, FollowFailure
  > {
    if rule == .success { return .success(true) }
    return followingFromScan(response.body, rule) ?? followingFromTree(response.body, rule)
  }

  /// What `following(in:_:)` reads from any answer, through a jansson tree.
  static func followingFromTree(_ body: [UInt8], _ rule: RESTConfiguration.FollowingRule) -> Result<
    Bool, FollowFailure
  > {
    guard let json = try? JSON.parse(body) else {
      return .failure(FollowFailure(.unavailable, "the state answer is not JSON"))
    }
    switch rule {
    case .success:
      return .success(true)
    case .nonEmpty(let pointer):
      guard let value = json.value(at: pointer) else { return .success(false) }
      switch value.kind {
      case .array, .object: return .success(value.count > 0)
      case .null: return .success(false)
      default: return .success(true)
      }
    case .pointer(let pointer):
      guard let flag = json.value(at: pointer)?.bool else {
        return .failure(FollowFailure(.unavailable, "the state answer has no true or false at \(pointer)"))
      }
      return .success(flag)
    }
  }

  /// The common answer, an object whose member the rule names (`/following`), read by
  /// the scanner without building a tree; nil for any other shape (a deeper pointer,
  /// an answer that is not an object), which `following(in:_:)` reads with jansson.
  static func followingFromScan(_ body: [UInt8], _ rule: RESTConfiguration.FollowingRule) -> Result<
    Bool, FollowFailure
  >? {
    let pointer: JSONPointer
    switch rule {
    case .success: return nil
    case .nonEmpty(let named), .pointer(let named): pointer = named
    }
    guard pointer.tokens.count == 1 else { return nil }
    let scanned = body.withUnsafeBytes { bytes in
      Result { () throws(JSONError) in try JSONScanner.scanObjectMembers(bytes) }
    }
    guard case .success(let object) = scanned else {
      return .failure(FollowFailure(.unavailable, "the state answer is not JSON"))
    }
    guard let object else { return nil }
    let member = object.member(pointer.tokens[0])
    switch rule {
    case .success:
      return .success(true)
    case .nonEmpty:
      guard let member else { return .success(false) }
      switch member.kind {
      case .array, .object: return .success(!member.isEmptyContainer)
      case .null: return .success(false)
      default: return .success(true)
      }
    case .pointer(let pointer):
      guard let flag = member?.boolValue else {
        return .failure(FollowFailure(.unavailable, "the state answer has no true or false at \(pointer)"))
      }
      return .success(flag)
    }
  }

  static func followedIDs(in response: HTTPResponse, _ batch: RESTConfiguration.Batch) -> Result<
    Set<String>, FollowFailure
  > {
    guard let json = try? JSON.parse(response.body), let items = json.value(at: batch.items), items.isArray else {
      return .failure(FollowFailure(.unavailable, "the batched state answer has no array at \(batch.items)"))
    }
    var ids = Set<String>()
    for item in items.elements {
      guard let value = item.value(at: batch.id) else { continue }
      if let string = value.string {
        ids.insert(string)
      } else if let number = value.integer {
        ids.insert(String(number))
      }
    }
    return .success(ids)
  }

  private func reportAttributes(_ key: EntityKey, _ response: HTTPResponse, _ pointer: JSONPointer) {
    guard let json = try? JSON.parse(response.body), let object = json.value(at: pointer), object.isObject else {
      return
    }
    onAttributes?(key, String(decoding: object.encoded(), as: UTF8.self))
  }

  public func kindProblem(_ kind: String) -> String? {
    guard configuration.kinds[kind] == nil else { return nil }
    return "no kind \"\(kind)\" (configured: \(configuration.kinds.keys.sorted().joined(separator: ", ")))"
  }

  /// Values the service should have refused (an intent replayed from the outbox, a
  /// preload): failed without sending anything.
  func unsendable<T>(_ problem: PlaceholderProblem, _ completion: @escaping (Result<T, FollowFailure>) -> Void) {
    loop.execute { completion(.failure(FollowFailure(.rejected(status: 0), problem.reason))) }
  }

  private func unknownKind(_ kind: String, _ completion: @escaping Completion) {
    let known = configuration.kinds.keys.sorted().joined(separator: ", ")
    loop.execute { completion(.failure(FollowFailure(.unknownKind, "no kind \"\(kind)\" (configured: \(known))"))) }
  }

  /// Counted by (kind, endpoint) pairs: building the `kind.endpoint` text on every
  /// call showed in profiles; it is built when `calls` is read.
  func count(_ kind: String, _ endpoint: String, _ delta: Int = 1) {
    callCounts[CallKey(kind: kind, endpoint: endpoint), default: 0] += delta
  }

  struct CallKey: Hashable {
    let kind: String
    let endpoint: String
  }
}

// MARK: Lists and details

extension RESTBackend {
  public func listDescription(_ name: String) -> ListDescription? {
    guard let list = configuration.lists[name] else { return nil }
    return ListDescription(dependsOn: list.dependsOn, requiredParams: list.params)
  }

  public func fetchListPage(
    _ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void
  ) {
    guard let list = configuration.lists[request.key.name] else {
      return loop.execute { completion(.failure(FollowFailure(.unknownKind, "no list \(request.key.name)"))) }
    }
    if let problem = validatePlaceholders(list: request.key.name, params: request.params) {
      return unsendable(problem, completion)
    }
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
    case (.none, _), (.link, _):
      break
    }
    if !extra.isEmpty {
      let query = Template.encodeParameters(extra.map { ($0.0, $0.1) }, [:], ids: [])
      http.url += (http.url.contains("?") ? "&" : "?") + query
    }
    count("list", request.key.name)
    self.http.send(http) { [weak self] result in
      guard self != nil else { return }
      completion(
        RESTBackend.outcome(result, list.endpoint) { response in
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
    count(key.kind, "detail")
    let ticket = http.send(request(detail, kind: key.kind, id: key.id), priority: priority) { result in
      completion(
        RESTBackend.outcome(result, detail) { response -> Result<String, FollowFailure> in
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
