import EventLoop
import HTTP
import Posix

/// A backend over HTTP, as a `RESTConfiguration` describes it, made of its roles: the
/// session they all send through (RESTSession), the follows (RESTFollows), the lists
/// (RESTLists), the details (RESTDetails) and the figures (RESTStatistics). It only
/// puts them together; each is handed out as the capability it serves.
///
/// Must be used on the loop's thread.
public final class RESTBackend: ModelBackend {
  public let session: RESTSession
  public let follows: RESTFollows
  public let lists: RESTLists
  public let details: RESTDetails
  public let statistics: RESTStatistics

  /// `environmentVariables` is where `auth.tokenEnv`, `$CREDENTIALS_DIRECTORY` and `$HOME`
  /// are looked up (tests pass their own).
  public init(
    configuration: RESTConfiguration, loop: EventLoop, environment: String? = nil,
    environmentVariables: (String) -> String? = Process.environment
  ) {
    session = RESTSession(
      configuration: configuration, loop: loop, environment: environment,
      environmentVariables: environmentVariables)
    follows = RESTFollows(session: session)
    lists = RESTLists(session: session)
    details = RESTDetails(session: session, placeholders: follows)
    statistics = RESTStatistics(session: session, follows: follows)
  }

  public func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    follows.setFollowing(key, following, completion: completion)
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    follows.fetchFollowing(key, completion: completion)
  }

  public func kindProblem(_ kind: String) -> String? { follows.kindProblem(kind) }

  public var capabilities: BackendCapabilities {
    BackendCapabilities(
      lists: lists, details: details, attributes: follows, environments: session, placeholders: follows,
      prioritised: details, statistics: statistics)
  }
}
