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
}
