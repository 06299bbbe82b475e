import HTTP
import JSON

/// The detail objects of entities (`getEntity`, preload), each from its kind's
/// `detail` endpoint, at the priority its caller asks (the preloader's below a
/// user's); follow-state reads go out at `readPriority`.
///
/// Must be used on the loop's thread.
public final class RESTDetails: DetailSource, PrioritisedBackend {
  public let session: RESTSession
  /// The ids' checks against every endpoint of their kind (RESTFollows+Placeholders).
  let placeholders: PlaceholderValidating

  public init(session: RESTSession, placeholders: PlaceholderValidating) {
    self.session = session
    self.placeholders = placeholders
  }

  public var readPriority: HTTPPriority {
    get { session.readPriority }
    set { session.readPriority = newValue }
  }

  public func hasDetail(kind: String) -> Bool { session.configuration.kinds[kind]?.detail != nil }

  public func fetchDetail(_ key: EntityKey, completion: @escaping (Result<String, FollowFailure>) -> Void) {
    _ = fetchDetail(key, priority: .user, completion: completion)
  }

  public func fetchDetail(
    _ key: EntityKey, priority: HTTPPriority, completion: @escaping (Result<String, FollowFailure>) -> Void
  ) -> PendingCall? {
    guard let detail = session.configuration.kinds[key.kind]?.detail else {
      session.loop.execute { completion(.failure(FollowFailure(.unknownKind, "\(key.kind) has no detail endpoint"))) }
      return nil
    }
    if let problem = placeholders.validatePlaceholders(kind: key.kind, id: key.id) {
      session.unsendable(problem, completion)
      return nil
    }
    if let unset = session.unsetValue(detail) {
      session.unsendable(unset, completion)
      return nil
    }
    if priority == .user, let failure = session.heldBeyondBudget(kind: key.kind) {
      session.loop.execute { completion(.failure(failure)) }
      return nil
    }
    session.count(key.kind, "detail")
    let world = session.world
    var request = session.request(detail, kind: key.kind, id: key.id)
    if priority == .user { request.maxHoldWait = session.maxHoldWait(kind: key.kind) }
    let ticket = session.send(request, detail, priority: priority) { [weak self] result in
      guard let self else { return }
      // Nothing keeps details by environment: the detail is asked for again in this one.
      guard self.session.world == world else {
        return self.session.answeredInOldWorld(world, acrossEnvironments: true, completion) {
          _ = self.fetchDetail(key, priority: priority, completion: completion)
        }
      }
      completion(
        self.session.answer(result, detail) { response -> Result<String, FollowFailure> in
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
        guard let self, self.session.http.cancel(ticket) else { return false }
        self.session.count(key.kind, "detail", -1)
        return true
      },
      setPriority: { [weak self] in _ = self?.session.http.setPriority(ticket, $0) })
  }
}
