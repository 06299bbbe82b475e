/// A snapshot of one entity, as every follow method returns it and every entity
/// notification carries it.
public struct EntityState: Sendable, Equatable {
  public var key: EntityKey
  /// What the UI should show now; nil while nothing is known.
  public var following: Bool?
  /// What the backend last confirmed; nil when never fetched.
  public var confirmed: Bool?
  public var pending: Bool
  /// The backend holds a follow request awaiting approval (a locked account): not a
  /// follow, so `confirmed` is false; a later read shows the approval.
  public var requested: Bool = false
  public var error: FollowFailure?
  /// The entity's detail object as compact JSON text, when a backend answer carried
  /// it; nil otherwise.
  public var attributes: String? = nil
  public var version: UInt64
  /// Set for a state a restart brought back from the state folder (`WarmStates`) and
  /// no answer has confirmed since: how old what it says is, in milliseconds.
  public var staleAgeMs: UInt64? = nil
}
