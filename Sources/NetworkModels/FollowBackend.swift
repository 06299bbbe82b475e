/// Where follows are read and written: the local store, a REST API, or a simulation
/// wrapping either. Calls are made on the loop and complete on the loop, never inside
/// the call itself, so callers can change state after calling.
public protocol FollowBackend: AnyObject {
  /// Makes the backend's follow state of `key` equal `following`.
  func setFollowing(_ key: EntityKey, _ following: Bool, completion: @escaping (Result<Bool, FollowFailure>) -> Void)

  /// Asks the backend whether `key` is followed.
  func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<Bool, FollowFailure>) -> Void)

  /// Every followed entity of `kind`, for the `following/<kind>` list.
  func followed(kind: String, completion: @escaping (Result<[EntityKey], FollowFailure>) -> Void)

  /// The backend that does the work, under any wrappers (a simulation).
  var underlying: FollowBackend { get }
}

extension FollowBackend {
  public var underlying: FollowBackend { self }
}

/// A backend whose answers carry entities' detail objects (a follow that answers
/// with the whole artist): it hands them to the store, which shows them as
/// `attributes`.
public protocol AttributeSource: AnyObject {
  var onAttributes: ((EntityKey, String) -> Void)? { get set }
}

/// A backend with environments and a token that `configure` can change.
public protocol ConfigurableBackend: AnyObject {
  var environment: String { get }
  var environmentNames: [String] { get }
  /// False when there is no environment of that name.
  func selectEnvironment(_ name: String) -> Bool
  /// nil removes the token.
  func setAuthToken(_ token: String?)
}
