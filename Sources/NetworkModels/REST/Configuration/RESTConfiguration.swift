import JSON

/// What `--backend rest --config FILE` describes: per kind, how to follow, unfollow
/// and read the follow state over HTTP, with each API's quirks as data. The file's
/// format is `schema/backend.schema.json`; `RESTConfiguration.parse` checks it.
public struct RESTConfiguration: @unchecked Sendable {
  /// Named base URLs (`https://api.artsy.net`), in the file's order.
  public var environments: [(name: String, baseURL: String)]
  public var defaultEnvironment: String
  public var auth: Auth?
  /// Sent with every request.
  public var headers: [(name: String, value: String)]
  public var timeoutMs: UInt64
  public var connectTimeoutMs: UInt64
  /// Connections (and so requests) open at once; more requests wait in line.
  public var maxInFlight: Int
  public var retry: RetryPolicy
  public var kinds: [String: KindEndpoints]
  /// Lists by name (`fetchList {list}`).
  public var lists: [String: ListEndpoints] = [:]
  /// How the API says when a rate limit ends (`rateLimit`).
  public var rateLimit = RateLimitHeaders()
  /// What a 403 means: a refusal, or the credentials judged (`forbidden`).
  public var forbidden = Forbidden.standard
  /// Named values every template can use (`{me}`), besides the built-in `{now}`.
  public var values: [String: ValueSource] = [:]
  /// What the file allows but should not (a token over plain http:// it opted in
  /// to): `check-config` and the server's start say it.
  public var warnings: [RESTConfigurationError] = []
  /// The folder of the file this was read from, which `auth.tokenFile` is relative to
  /// (nil: the working folder).
  public var folder: String?

  public struct Auth: Sendable {
    /// `Authorization`, `X-Access-Token`, …
    public var header: String
    /// Put before the token with a space (`Bearer`); nil for the bare token.
    public var scheme: String?
    /// Where the token comes from until `configure` sets one: the first of
    /// `tokenCredential`, `tokenFile`, `tokenEnvironmentVariable` that is there
    /// (`AuthTokenSources`).
    public var tokenEnvironmentVariable: String?
    /// A file holding the token, as the configuration writes it (`~/`, or relative to
    /// the configuration's folder).
    public var tokenFile: String?
    /// The name of a systemd credential (`LoadCredential=NAME:…`), read from
    /// `$CREDENTIALS_DIRECTORY/NAME`.
    public var tokenCredential: String?
    // (`allowPlainHTTP` is only read at parse time: it turns an error into a warning.)
  }

  public struct KindEndpoints: @unchecked Sendable {
    public var follow: Endpoint
    public var unfollow: Endpoint
    public var state: StateEndpoint
    public var detail: Endpoint?
    /// Overrides the configuration's `retry` for this kind.
    public var retry: RetryPolicy?
    /// The captured names (`{subscriptionId}`) the unfollow's templates use: each must
    /// be held for the entity before the unfollow can go out.
    public var unfollowNeeds: Set<String> = []
  }

  /// What an answer's status means beyond "2xx: done; 401/403: unauthorized; 408,
  /// 429, 5xx: try again; other 4xx: rejected".
  public enum StatusMeaning: String, Sendable {
    /// The change was already made (an unfollow's 404).
    case done
    case following
    /// A state check's 404.
    case notFollowing
    /// A rate limit (GitHub's 403 with `x-ratelimit-remaining: 0`): tried again after
    /// the wait the answer states; every request to the API waits too.
    case retry
  }

  public struct Endpoint: @unchecked Sendable {
    public var method: String
    /// Relative to the environment's base URL; `{id}` and `{kind}` are filled in,
    /// percent-encoded.
    public var path: String
    /// In order; a value that is exactly `{ids}` repeats the parameter per id.
    public var query: [(name: String, value: String)]
    public var body: Body?
    public var headers: [(name: String, value: String)]
    public var timeoutMs: UInt64?
    public var statusMeanings: [Int: StatusMeaning]
    /// Meanings that depend on a header (`onStatus` objects and arrays), before
    /// `statusMeanings`.
    public var statusRules: [Int: [StatusRule]] = [:]
    /// Where in a successful answer the entity's detail object is: its fields become
    /// the entity's `attributes`.
    public var attributes: JSONPointer?
    /// Where a 2xx answer lists errors (GraphQL's `/errors`): any there fail the call.
    public var errors: ErrorsRule? = nil
    /// Values kept from a 2xx answer for the entity (`"capture": {"subscriptionId": "/id"}`),
    /// by placeholder name; in a batched state answer the pointers are the item's.
    public var capture: [Capture] = []
    /// Follow and unfollow only: where a 2xx answer states the result.
    public var answer = AnswerPointers()
  }

  public enum Body: @unchecked Sendable {
    /// A JSON template: every string value is filled in; `"{ids}"` becomes an array.
    case json(JSON)
    /// `application/x-www-form-urlencoded` fields, filled in like query values.
    case form([(name: String, value: String)])
    /// `{"query", "variables", "operationName"}`: the query as written, the variables
    /// filled like `json`.
    case graphql(GraphQLBody)
  }

  public struct StateEndpoint: @unchecked Sendable {
    public var endpoint: Endpoint
    public var following: FollowingRule
    /// Set when the endpoint takes many ids at once and answers with the followed
    /// subset.
    public var batch: Batch?
    /// Where a single-id answer says a follow request awaits approval (a boolean).
    public var requested: JSONPointer? = nil
  }

  /// How a successful state answer says "following".
  public enum FollowingRule: Sendable, Equatable {
    /// Any 2xx means following (its 404 is usually "not following").
    case success
    /// A non-empty array or object at the pointer means following.
    case nonEmpty(JSONPointer)
    /// A boolean at the pointer.
    case pointer(JSONPointer)
    /// The value at the pointer (not null) is, or has, that text.
    case matches(JSONPointer, StatusRule.Match)
  }

  public struct Batch: Sendable {
    /// The most ids in one call; more reads make more calls.
    public var maxIds: Int
    /// How long the first read of a batch waits for others to join it.
    public var windowMs: UInt64
    /// The array of followed items in the answer.
    public var items: JSONPointer
    /// Each item's id, relative to the item (unused when read by position).
    public var id: JSONPointer
    /// When set, `{ids}` is one value: the ids joined by this (`a,b,c`), not a
    /// parameter (or JSON element) per id.
    public var join: String? = nil
    public var by: BatchReading = .subset
    /// Set when the answer has one item per id asked, each saying whether it is
    /// followed (and requested), relative to the item; nil when the answer lists only
    /// the followed subset.
    public var flags = AnswerPointers()
  }

  /// How a batched state answer says which ids are followed.
  public enum BatchReading: String, Sendable {
    /// The array at `items` holds the followed items, each with its id at `id`.
    case subset
    /// The array at `items` has one boolean per id asked, in the order asked.
    case position
  }

  public func baseURL(of environment: String) -> String? {
    environments.first(where: { $0.name == environment })?.baseURL
  }
}
