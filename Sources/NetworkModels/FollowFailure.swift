/// The last failure of an entity, as EntityState's `error` shows it.
public struct FollowFailure: Error, Sendable, Equatable {
  public enum Kind: Sendable, Equatable {
    /// Network error, timeout, 5xx, 429: worth retrying.
    case unavailable
    /// Another 4xx.
    case rejected(status: Int)
    /// 401 or 403: a token is missing or wrong.
    case unauthorized(status: Int)
    /// The backend has no such kind.
    case unknownKind
  }

  public var kind: Kind
  public var message: String
  /// For 429 and 503: how long the backend asked us to wait.
  public var retryAfter: Duration?

  public init(_ kind: Kind, _ message: String, retryAfter: Duration? = nil) {
    self.kind = kind
    self.message = message
    self.retryAfter = retryAfter
  }

  public var isRetryable: Bool { kind == .unavailable }
}
