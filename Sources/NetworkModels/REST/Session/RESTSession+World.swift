import HTTP
import JSON
import Posix

/// One world at a time: the environment, the token and the values every request is
/// asked under. An answer asked under another is not about this one: a change
/// withdraws the requests still waiting for a connection, and an answer that comes
/// afterwards to a request of the old world is never read.
extension RESTSession {
  /// What a request was asked under, kept in its answer's closure.
  struct World: Equatable {
    /// Bumped when another environment becomes active.
    var environment: UInt32 = 0
    /// Bumped by every change: the environment's, the token's, a value's.
    var serial: UInt32 = 0
  }

  /// Another world is active: what waits for a connection was built for the old one
  /// (its URL, its token, its values in the path) and is withdrawn; each call is then
  /// answered as `answeredInOldWorld` says. In another environment the reads of a
  /// batch not yet sent belong to the old one too.
  /// A rate limit is the account's (the token's) in one environment: another one
  /// (`account`) ends the hold; another value does not.
  func worldChanged(environment changed: Bool, account: Bool = false) {
    world.serial &+= 1
    if changed {
      world.environment &+= 1
      onEnvironmentChange?()
    }
    let withdrawn = http.cancelWaiting()
    if withdrawn > 0 {
      Log.info("\(withdrawn) request(s) of the previous configuration withdrawn before they went out")
    }
    if changed || account {
      http.endHold(
        changed ? "the rate limit was the previous environment's" : "the rate limit was the previous token's")
    }
  }

  /// A call of the old world answered (or withdrawn): with only the token or values
  /// changed, the same call is made again under the new ones (`again`); in another
  /// environment a read or a mutation is not (its store dropped it with the old
  /// environment, and an intent of that environment stays its own): its caller hears
  /// a failure. `acrossEnvironments` makes the call again there too (a detail, which
  /// no store tracks by environment).
  func answeredInOldWorld<T>(
    _ asked: World, acrossEnvironments: Bool = false, _ completion: (Result<T, FollowFailure>) -> Void,
    again: () -> Void
  ) {
    if asked.environment == world.environment || acrossEnvironments { return again() }
    completion(.failure(droppedWithEnvironment))
  }

  var droppedWithEnvironment: FollowFailure {
    FollowFailure(
      .unavailable, "asked in an environment that is no longer active (now \(environment)): the answer is dropped")
  }

  /// Kinds and lists fetched through any of the values `names`: what they hold was
  /// read for the old values. A kind is reached through any of its endpoints (its
  /// attributes come from a follow's answer, a detail or its lists); a value in a
  /// header every request carries reaches all.
  public func usesOfValues(_ names: [String]) -> ValueUses {
    let changed = Set(names)
    func reaches(_ endpoint: RESTConfiguration.Endpoint) -> Bool {
      !changed.isDisjoint(with: Self.placeholderNames(endpoint))
    }
    if configuration.headers.contains(where: { !changed.isDisjoint(with: Template.placeholders(in: $0.value)) }) {
      return ValueUses(kinds: Set(configuration.kinds.keys), lists: Set(configuration.lists.keys))
    }
    var uses = ValueUses()
    for (kind, endpoints) in configuration.kinds
    where reaches(endpoints.state.endpoint) || reaches(endpoints.follow) || reaches(endpoints.unfollow)
      || endpoints.detail.map(reaches) == true
    {
      uses.kinds.insert(kind)
    }
    for (list, endpoints) in configuration.lists where reaches(endpoints.endpoint) {
      uses.lists.insert(list)
      uses.kinds.insert(endpoints.item.kind)
    }
    return uses
  }
}

extension Result where Success == HTTPResponse, Failure == HTTPError {
  /// Given up before it went out (`HTTPClient.cancel`).
  var wasWithdrawn: Bool { failureKind == .cancelled }

  /// Given up before it went out: a rate limit would have kept it longer than it may wait.
  var wasHeldTooLong: Bool { failureKind == .heldTooLong }

  /// Withdrawn or held too long: the API never saw it.
  var wasNeverSent: Bool { wasWithdrawn || wasHeldTooLong }

  private var failureKind: HTTPError.Kind? {
    guard case .failure(let error) = self else { return nil }
    return error.kind
  }
}
