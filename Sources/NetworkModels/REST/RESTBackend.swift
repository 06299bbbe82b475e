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
  public typealias Completion = (Result<FollowAnswer, FollowFailure>) -> Void

  public let configuration: RESTConfiguration
  public let http: HTTPClient
  public private(set) var environment: String
  public var onAttributes: ((EntityKey, String) -> Void)?
  public var readPriority = HTTPPriority.user
  /// Wall-clock seconds since 1970, for reset times given as dates and `{now}` (tests set it).
  public var wallClock: () -> Double = ResetTime.wallClockNow
  /// Calls made per kind and endpoint (`artist.state`), for `stats` and tests.
  public var calls: [String: Int] {
    var calls = Dictionary(uniqueKeysWithValues: callCounts.map { ("\($0.key.kind).\($0.key.endpoint)", $0.value) })
    for (kind, read) in stateReads where read.calls > 0 { calls["\(kind).state", default: 0] += read.calls }
    return calls
  }
  private var callCounts: [CallKey: Int] = [:]
  /// In flight and latency per endpoint (RESTBackend+CallFigures).
  var endpointFigures: [CallKey: EndpointFigures] = [:]
  var lastCounted: CallKey?
  /// Values answers gave for entities, for their later requests (RESTBackend+Captures).
  public var capturedValues = CapturedValues()
  private var authToken: String?
  /// Why the token `auth.tokenEnv` names was not taken (never the token itself).
  public private(set) var tokenEnvironmentProblem: String?
  var batches: [String: PendingBatch] = [:]
  /// The world requests are asked under now (RESTBackend+World).
  var world = World()
  /// The configured values that are set (`{me}`), by name; see RESTBackend+Values.
  var values: [String: String] = [:]
  let fillsValues: Bool
  /// Each kind's state read, boxed once: a read borrows it, where copying the kind's
  /// `KindEndpoints` out of the configuration retained every string and table of
  /// its endpoints, for every read.
  let stateReads: [String: StateRead]
  /// Whether a kind's batched read joins ids into one JSON string (`joinProblem`):
  /// when none does, an id is not looked at for that, in every read's checks.
  let joinsIDsInJSON: Bool
  /// The last kind read and its state read: a kind's name is looked up three times a
  /// read (the service's check, the placeholders', the read's), each hashing it.
  private var lastRead: (kind: String, read: StateRead)?
  var loop: EventLoop { http.loop }

  func stateRead(_ kind: String) -> StateRead? {
    if let lastRead, lastRead.kind == kind { return lastRead.read }
    guard let read = stateReads[kind] else { return nil }
    lastRead = (kind, read)
    return read
  }

  final class StateRead {
    let state: RESTConfiguration.StateEndpoint
    /// The single read's path, cut once (RESTBackend+SingleRead), and its headers.
    let path: SingleReadPath?
    let headers: [(name: String, value: String)]
    /// Single reads sent (`calls`): counted here, where the `callCounts` table hashed
    /// the kind's and the endpoint's names for every read.
    var calls = 0
    /// In flight and latency of those reads, for `stats` (RESTBackend+CallFigures).
    var figures = EndpointFigures()
    init(_ state: RESTConfiguration.StateEndpoint, kind: String, headers: [(name: String, value: String)]) {
      self.state = state
      path = SingleReadPath(state.endpoint, kind: kind)
      self.headers = headers + state.endpoint.headers
    }
  }

  /// Reads of one kind waiting to go out as one call.
  final class PendingBatch {
    var ids: [String] = []
    /// By bytes: `caf\u{E9}` and `cafe\u{301}` are two ids of the batch (`ExactString`).
    var waiters: [ExactString: [Completion]] = [:]
    var timer: EventLoop.TimerID?
    var priority = HTTPPriority.preload
  }

  /// `environmentVariables` is where `auth.tokenEnv` is looked up (tests pass their own).
  public init(
    configuration: RESTConfiguration, loop: EventLoop, environment: String? = nil,
    environmentVariables: (String) -> String? = Process.environment
  ) {
    self.configuration = configuration
    stateReads = Dictionary(
      uniqueKeysWithValues: configuration.kinds.map {
        ($0.key, StateRead($0.value.state, kind: $0.key, headers: configuration.headers))
      })
    joinsIDsInJSON = configuration.kinds.values.contains {
      guard $0.state.batch?.join != nil, case .json = $0.state.endpoint.body else { return false }
      return true
    }
    self.environment = environment ?? configuration.defaultEnvironment
    http = HTTPClient(loop: loop, maxConnections: configuration.maxInFlight)
    if let name = configuration.auth?.tokenEnvironmentVariable, let token = environmentVariables(name), !token.isEmpty {
      if let problem = AuthToken.problem(token) {
        tokenEnvironmentProblem = "the token in $\(name) " + problem
      } else {
        authToken = token
      }
    }
    values = Self.initialValues(configuration.values, environmentVariables)
    fillsValues = Self.fillsValues(configuration)
    warnOfProxies()
  }

  /// At start, the environments whose token a proxy variable keeps from going out
  /// (each request is refused too, with the same words).
  private func warnOfProxies() {
    guard configuration.auth != nil else { return }
    for (name, base) in configuration.environments {
      if case .refused(let reason) = http.proxies.route(base, carriesCredentials: true) {
        Log.warn("environment \(name) (\(base)): nothing with the auth token is sent: \(reason)")
      }
    }
  }

  // MARK: ConfigurableBackend

  public var environmentNames: [String] { configuration.environments.map(\.name) }

  public func selectEnvironment(_ name: String) -> Bool {
    guard configuration.baseURL(of: name) != nil else { return false }
    guard !name.utf8.elementsEqual(environment.utf8) else { return true }
    environment = name
    worldChanged(environment: true)
    return true
  }

  /// The token requests carry from now on (nil: none); one `AuthToken.problem` refuses
  /// is refused, the previous one kept.
  @discardableResult
  public func setAuthToken(_ token: String?) -> TokenChange {
    if let token, AuthToken.problem(token) != nil { return .refused }
    let same =
      switch (token, authToken) {
      case (nil, nil): true
      case (let new?, let old?): new.utf8.elementsEqual(old.utf8)
      default: false
      }
    guard !same else { return .unchanged }
    authToken = token
    worldChanged(environment: false)
    return .changed
  }

  // MARK: ModelBackend

  public func setFollowing(_ key: EntityKey, _ following: Bool, completion: @escaping Completion) {
    guard let kind = configuration.kinds[key.kind] else { return unknownKind(key.kind, completion) }
    // The id is sendable: what asks for a change was admitted (`Models.admit`, or the
    // replay of an intent, `FollowStore.replayIntents`).
    if let failure = heldBeyondBudget(kind: key.kind) { return loop.execute { completion(.failure(failure)) } }
    if !following && !kind.unfollowNeeds.isEmpty { return unfollowWithCaptures(key, kind, completion) }
    let endpoint = following ? kind.follow : kind.unfollow
    if let unset = unsetValue(endpoint) { return unsendable(unset, completion) }
    sendChange(endpoint, key, following, request(endpoint, kind: key.kind, id: key.id), completion)
  }

  /// Sends a follow (or unfollow) built as `request`, and answers how it went.
  func sendChange(
    _ endpoint: RESTConfiguration.Endpoint, _ key: EntityKey, _ following: Bool, _ request: HTTPRequest,
    _ completion: @escaping Completion
  ) {
    count(key.kind, following ? "follow" : "unfollow")
    let world = self.world
    send(request, endpoint) { [weak self] result in
      guard let self else { return }
      guard self.world == world else {
        return self.answeredInOldWorld(world, completion) {
          self.setFollowing(key, following, completion: completion)
        }
      }
      completion(self.changeAnswer(result, endpoint, key, following))
    }
  }

  /// What a follow's (or unfollow's) answer says, its captures kept or forgotten. The
  /// fuzzer reads answers through it too.
  func changeAnswer(
    _ result: Result<HTTPResponse, HTTPError>, _ endpoint: RESTConfiguration.Endpoint, _ key: EntityKey,
    _ following: Bool
  ) -> Result<FollowAnswer, FollowFailure> {
    // The configuration lets a follow's statuses mean only "done" or "following"
    // (an unfollow's "done" or "notFollowing"): each is the change confirmed.
    var byStatus = false
    let answer = self.answer(
      result, endpoint,
      meaning: { _ in
        byStatus = true
        return .success(FollowAnswer(following))
      }
    ) {
      response -> Result<FollowAnswer, FollowFailure> in
      if let pointer = endpoint.attributes, (200...299).contains(response.status) {
        reportAttributes(key, response, pointer)
      }
      let answer = Self.mutationAnswer(response, endpoint, following: following)
      if case .success(.following) = answer, !endpoint.capture.isEmpty,
        let failure = keepCaptures(key, endpoint.capture, response)
      {
        return .failure(failure)
      }
      return answer
    }
    if case .success(.notFollowing) = answer { forgetCaptures(key) }
    // A follow confirmed by its status (YouTube's 400 subscriptionDuplicate) answered
    // no value: one held from an earlier follow may name what is gone, so the unfollow
    // reads the state first.
    if byStatus, following, !endpoint.capture.isEmpty { forgetCaptures(key) }
    return answer
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping Completion) {
    guard let read = stateRead(key.kind) else { return unknownKind(key.kind, completion) }
    if let problem = validatePlaceholders(kind: key.kind, id: key.id) { return unsendable(problem, completion) }
    // Checked only when values are configured: passing the endpoint copies it (every
    // string and table of it retained), for every read.
    if !configuration.values.isEmpty, let unset = unsetValue(read.state.endpoint) {
      return unsendable(unset, completion)
    }
    if let batch = read.state.batch {
      enqueue(key, batch, completion)
      return
    }
    read.calls += 1
    sendSingleRead(key, read, completion)
  }

  /// How a single read's answer reads (see `sendSingleRead`).
  func singleReadAnswer(_ result: Result<HTTPResponse, HTTPError>, _ key: EntityKey, _ read: StateRead)
    -> Result<FollowAnswer, FollowFailure>
  {
    let answer = self.answer(
      result, read.state.endpoint, meaning: { .success(FollowAnswer($0 == .following)) }
    ) { response in
      let answer = Self.stateAnswer(response, read.state)
      if case .success(.following) = answer, !read.state.endpoint.capture.isEmpty {
        self.captureFromState(key, read.state.endpoint.capture, response)
      }
      return answer
    }
    if case .success(.notFollowing) = answer { self.forgetCaptures(key) }
    return answer
  }

  public var capabilities: BackendCapabilities {
    BackendCapabilities(
      lists: self, details: self, attributes: self, environments: self, placeholders: self, prioritised: self,
      statistics: self)
  }

  public func holds(limit: Int) -> ModelInspection.Holds {
    ModelInspection.Holds(
      api: configuration.baseURL(of: environment) ?? "", environment: environment, queue: http.holds(limit: limit))
  }

  public var httpStatistics: HTTPStatistics {
    HTTPStatistics(
      counters: http.counters, inFlight: http.inFlight, callsByEndpoint: calls,
      endpoints: figuresByEndpoint)
  }

  // MARK: Batching

  private func enqueue(_ key: EntityKey, _ batch: RESTConfiguration.Batch, _ completion: @escaping Completion) {
    let pending = batches[key.kind] ?? PendingBatch()
    batches[key.kind] = pending
    let id = ExactString(key.id)
    if pending.waiters[id] == nil { pending.ids.append(key.id) }
    pending.waiters[id, default: []].append(completion)
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
    let call = request(state, values: ["kind": kind], ids: pending.ids, join: batch.join)
    let world = self.world
    send(call, state, priority: pending.priority) { [weak self] result in
      guard let self else { return }
      guard self.world == world else {
        for id in pending.ids {
          for waiter in pending.waiters[ExactString(id)] ?? [] {
            self.answeredInOldWorld(world, waiter) {
              self.fetchFollowing(EntityKey(kind: kind, id: id), completion: waiter)
            }
          }
        }
        return
      }
      // A status meaning answers for every id of the call: Artsy's batched check
      // answers 404 when none of them is followed (see examples/artsy/ENDPOINTS.md).
      let answers = self.batchOutcome(result, state, batch, ids: pending.ids, kind: kind)
      for id in pending.ids {
        let answer = answers(id)
        if case .success(.notFollowing) = answer, self.capturedValues.count > 0 {
          self.forgetCaptures(EntityKey(kind: kind, id: id))
        }
        for waiter in pending.waiters[ExactString(id)] ?? [] { waiter(answer) }
      }
    }
  }

  // MARK: Requests

  /// The HTTP request of `endpoint` for `id` (or `ids`, batched), in the current environment.
  public func request(_ endpoint: RESTConfiguration.Endpoint, kind: String, id: String? = nil, ids: [String] = [])
    -> HTTPRequest
  {
    // A path alone, with no configured values: filled without a dictionary of the
    // two (the common single read).
    if let id, !fillsValues, endpoint.query.isEmpty, endpoint.body == nil {
      let url = Template.fill(
        endpoint.path, prefix: baseURL, kind: kind, id: id, encode: { Template.percentEncode($0) })
      return request(endpoint, url: url, headers: configuration.headers + endpoint.headers)
    }
    // Made whole: adding "id" to a one-entry dictionary would grow and rehash it, for
    // every request.
    let values = id.map { ["kind": kind, "id": $0] } ?? ["kind": kind]
    return request(endpoint, values: values, ids: ids)
  }

  var baseURL: String { configuration.baseURL(of: environment) ?? configuration.environments[0].baseURL }

  /// The HTTP request of `endpoint` with its placeholders filled from `values`.
  func request(
    _ endpoint: RESTConfiguration.Endpoint, values requestValues: [String: String], ids: [String] = [],
    join: String? = nil
  ) -> HTTPRequest {
    let values = fillsValues ? withConfiguredValues(requestValues) : requestValues
    var url = baseURL + Template.fill(endpoint.path, values, encode: { Template.percentEncode($0) })
    let query = Template.encodeParameters(endpoint.query, values, ids: ids, join: join)
    if !query.isEmpty { url += (url.contains("?") ? "&" : "?") + query }
    var headers = configuration.headers + endpoint.headers
    if fillsValues { headers = headers.map { ($0.name, Template.fill($0.value, values, encode: { $0 })) } }
    var body: [UInt8]?
    switch endpoint.body {
    case .json(let template):
      body = Template.fill(json: template, values, ids: ids, join: join).encoded()
      headers.append(("Content-Type", "application/json"))
    case .form(let fields):
      body = Array(Template.encodeParameters(fields, values, ids: ids, join: join).utf8)
      headers.append(("Content-Type", "application/x-www-form-urlencoded"))
    case .graphql(let graphql):
      body = graphql.encoded(values, ids: ids)
      headers.append(("Content-Type", "application/json"))
    case nil:
      break
    }
    return request(endpoint, url: url, headers: headers, body: body)
  }

  /// The request with the credentials added to `headers`.
  func request(
    _ endpoint: RESTConfiguration.Endpoint, url: String, headers: [(name: String, value: String)],
    body: [UInt8]? = nil
  ) -> HTTPRequest {
    var headers = headers
    var carriesCredentials = false
    if let auth = configuration.auth, let authToken {
      headers.append((auth.header, auth.scheme.map { "\($0) \(authToken)" } ?? authToken))
      carriesCredentials = true
    }
    return HTTPRequest(
      method: endpoint.method, url: url, headers: headers, body: body,
      timeout: .milliseconds(endpoint.timeoutMs ?? configuration.timeoutMs),
      connectTimeout: .milliseconds(configuration.connectTimeoutMs), carriesCredentials: carriesCredentials)
  }

  private func reportAttributes(_ key: EntityKey, _ response: HTTPResponse, _ pointer: JSONPointer) {
    guard let json = try? JSON.parse(response.body), let object = json.value(at: pointer), object.isObject else {
      return
    }
    onAttributes?(key, String(decoding: object.encoded(), as: UTF8.self))
  }

  public func kindProblem(_ kind: String) -> String? {
    guard stateRead(kind) == nil else { return nil }
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
    let key = CallKey(kind: kind, endpoint: endpoint)
    callCounts[key, default: 0] += delta
    lastCounted = key
  }

  struct CallKey: Hashable {
    let kind: String
    let endpoint: String
  }
}
