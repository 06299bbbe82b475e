import EventLoop
import HTTP
import JSON

/// Follows over HTTP, as a `RESTConfiguration` describes each kind's endpoints: the
/// changes (follow, unfollow) and the state reads, single or batched. Reads of a kind
/// whose state endpoint takes many ids are batched (DataLoader): the first read waits
/// `windowMs` for others, up to `maxIds`, then one call answers them all.
///
/// Must be used on the loop's thread.
public final class RESTFollows: ModelBackend, PlaceholderValidating, AttributeSource {
  public typealias Completion = (Result<FollowAnswer, FollowFailure>) -> Void

  public let session: RESTSession
  public var onAttributes: ((EntityKey, String) -> Void)?
  var batches: [String: PendingBatch] = [:]
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

  func stateRead(_ kind: String) -> StateRead? {
    if let lastRead, lastRead.kind == kind { return lastRead.read }
    guard let read = stateReads[kind] else { return nil }
    lastRead = (kind, read)
    return read
  }

  final class StateRead {
    let state: RESTConfiguration.StateEndpoint
    /// The single read's path, cut once (RESTFollows+SingleRead), and its headers.
    let path: SingleReadPath?
    let headers: [(name: String, value: String)]
    /// Single reads sent (`calls`): counted here, where the session's table hashed
    /// the kind's and the endpoint's names for every read.
    var calls = 0
    /// In flight and latency of those reads, for `stats` (RESTSession+CallFigures).
    var figures = EndpointFigures()
    /// How long a read a caller waits for may wait for a rate limit (`maxHoldWait`).
    let maxHoldWait: Duration
    /// Its reads' rate-limit screen (`RESTSession.rateLimitScreen`), made once a world.
    private var screen: (world: RESTSession.World, read: (Result<HTTPResponse, HTTPError>) -> Void)?
    init(
      _ state: RESTConfiguration.StateEndpoint, kind: String, headers: [(name: String, value: String)],
      maxHoldWait: Duration
    ) {
      self.state = state
      self.maxHoldWait = maxHoldWait
      path = SingleReadPath(state.endpoint, kind: kind)
      self.headers = headers + state.endpoint.headers
    }

    func rateLimitScreen(_ session: RESTSession) -> (Result<HTTPResponse, HTTPError>) -> Void {
      if let screen, screen.world == session.world { return screen.read }
      let made = session.rateLimitScreen(state.endpoint)
      screen = (session.world, made)
      return made
    }
  }

  public init(session: RESTSession) {
    self.session = session
    let configuration = session.configuration
    stateReads = Dictionary(
      uniqueKeysWithValues: configuration.kinds.map {
        (
          $0.key,
          StateRead(
            $0.value.state, kind: $0.key, headers: configuration.headers,
            maxHoldWait: session.maxHoldWait(kind: $0.key))
        )
      })
    joinsIDsInJSON = configuration.kinds.values.contains {
      guard $0.state.batch?.join != nil, case .json = $0.state.endpoint.body else { return false }
      return true
    }
    session.onEnvironmentChange = { [weak self] in self?.failPendingBatches() }
  }

  // MARK: Changes

  public func setFollowing(_ key: EntityKey, _ following: Bool, completion: @escaping Completion) {
    guard let kind = session.configuration.kinds[key.kind] else { return unknownKind(key.kind, completion) }
    // The id is sendable: what asks for a change was admitted (`Models.admit`, or the
    // replay of an intent, `FollowStore.replayIntents`).
    if let failure = session.heldBeyondBudget(kind: key.kind, mutation: true) {
      return session.loop.execute { completion(.failure(failure)) }
    }
    if !following && !kind.unfollowNeeds.isEmpty { return unfollowWithCaptures(key, kind, completion) }
    let endpoint = following ? kind.follow : kind.unfollow
    if let unset = session.unsetValue(endpoint) { return session.unsendable(unset, completion) }
    sendChange(endpoint, key, following, session.request(endpoint, kind: key.kind, id: key.id), completion)
  }

  /// Sends a follow (or unfollow) built as `request`, and answers how it went.
  func sendChange(
    _ endpoint: RESTConfiguration.Endpoint, _ key: EntityKey, _ following: Bool, _ request: HTTPRequest,
    _ completion: @escaping Completion
  ) {
    session.count(key.kind, following ? "follow" : "unfollow")
    let world = session.world
    var request = request
    request.maxHoldWait = session.maxHoldWait(kind: key.kind, mutation: true)
    session.send(request, endpoint) { [weak self] result in
      guard let self else { return }
      guard self.session.world == world else {
        return self.session.answeredInOldWorld(world, completion) {
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
    let answer = session.answer(
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
        let failure = session.keepCaptures(key, endpoint.capture, response)
      {
        return .failure(failure)
      }
      return answer
    }
    if case .success(.notFollowing) = answer { session.forgetCaptures(key) }
    // A follow confirmed by its status (YouTube's 400 subscriptionDuplicate) answered
    // no value: one held from an earlier follow may name what is gone, so the unfollow
    // reads the state first.
    if byStatus, following, !endpoint.capture.isEmpty { session.forgetCaptures(key) }
    return answer
  }

  private func reportAttributes(_ key: EntityKey, _ response: HTTPResponse, _ pointer: JSONPointer) {
    guard let json = try? JSON.parse(response.body), let object = json.value(at: pointer), object.isObject else {
      return
    }
    onAttributes?(key, String(decoding: object.encoded(), as: UTF8.self))
  }

  // MARK: Reads

  public func fetchFollowing(_ key: EntityKey, completion: @escaping Completion) {
    guard let read = stateRead(key.kind) else { return unknownKind(key.kind, completion) }
    if let problem = validatePlaceholders(kind: key.kind, id: key.id) { return session.unsendable(problem, completion) }
    // Checked only when values are configured: passing the endpoint copies it (every
    // string and table of it retained), for every read.
    if !session.configuration.values.isEmpty, let unset = session.unsetValue(read.state.endpoint) {
      return session.unsendable(unset, completion)
    }
    // A caller's read does not wait out a long rate limit in silence (a preload's may).
    if session.readPriority == .user, let failure = session.heldBeyondBudget(kind: key.kind) {
      return session.loop.execute { completion(.failure(failure)) }
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
    let answer = session.answer(
      result, read.state.endpoint, meaning: { .success(FollowAnswer($0 == .following)) }
    ) { response in
      let answer = Self.stateAnswer(response, read.state)
      if case .success(.following) = answer, !read.state.endpoint.capture.isEmpty {
        self.session.captureFromState(key, read.state.endpoint.capture, response)
      }
      return answer
    }
    if case .success(.notFollowing) = answer { session.forgetCaptures(key) }
    return answer
  }

  // MARK: Kinds

  public func kindProblem(_ kind: String) -> String? {
    guard stateRead(kind) == nil else { return nil }
    return "no kind \"\(kind)\" (configured: \(session.configuration.kinds.keys.sorted().joined(separator: ", ")))"
  }

  private func unknownKind(_ kind: String, _ completion: @escaping Completion) {
    let known = session.configuration.kinds.keys.sorted().joined(separator: ", ")
    session.loop.execute {
      completion(.failure(FollowFailure(.unknownKind, "no kind \"\(kind)\" (configured: \(known))")))
    }
  }
}
