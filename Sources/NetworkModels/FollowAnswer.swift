/// What a backend says it holds for an entity after a follow, an unfollow or a read.
/// More than a Bool: an account that approves its followers (Mastodon's locked
/// accounts) answers a follow with a request awaiting approval, which is not a follow
/// and must never be shown as confirmed.
public enum FollowAnswer: Sendable, Equatable {
  case following
  case notFollowing
  /// A follow request the other side has not approved yet: not following.
  case requested

  public init(_ following: Bool) { self = following ? .following : .notFollowing }

  /// Whether the backend follows: false for a request awaiting approval.
  public var following: Bool { self == .following }
}

/// Backends that only know follows (local, memory, test doubles) answer true or false.
extension FollowAnswer: ExpressibleByBooleanLiteral {
  public init(booleanLiteral value: Bool) { self.init(value) }
}
