import EventLoop
import HTTP
import JSON
import Posix

/// What every part of a REST backend shares: the configuration, the HTTP client, the
/// world requests are asked under (environment, token, values), the rate limit, the
/// values captured from answers and the calls counted. The follows, lists and details
/// each send through it; `configure` changes it as a `ConfigurableBackend`.
///
/// Must be used on the loop's thread.
public final class RESTSession: ConfigurableBackend {
  public let configuration: RESTConfiguration
  public let http: HTTPClient
  public private(set) var environment: String
  /// The priority of follow-state reads (`PrioritisedBackend.readPriority`).
  public var readPriority = HTTPPriority.user
  /// Wall-clock seconds since 1970, for reset times given as dates and `{now}` (tests set it).
  public var wallClock: () -> Double = ResetTime.wallClockNow
  /// Values answers gave for entities, for their later requests (RESTSession+Captures).
  public var capturedValues = CapturedValues()
  /// Why the last state read of an entity held no value for its unfollow (a value
  /// that did not match its `pattern`): the unfollow that then cannot go out says it.
  var lastCaptureMiss: [EntityKey: String] = [:]
  var authToken: String?
  /// Why the token `auth.tokenCredential`, `tokenFile` or `tokenEnv` gave was not taken
  /// (never the token itself): the server does not start.
  public private(set) var tokenProblem: String?
  /// Where the start's token came from (`$GITHUB_TOKEN`, a file's path), for the log.
  public private(set) var tokenSource: String?
  /// When no source gave a token: what was looked for.
  public private(set) var tokenNotes: [String] = []
  /// The world requests are asked under now (RESTSession+World).
  var world = World()
  /// Called when another environment becomes active, before the requests waiting for
  /// a connection are withdrawn: the follows fail their batches not yet sent.
  var onEnvironmentChange: (() -> Void)?
  /// The configured values that are set (`{me}`), by name; see RESTSession+Values.
  var values: [String: String] = [:]
  let fillsValues: Bool
  /// Calls made per kind and endpoint, but single state reads (RESTFollows.StateRead).
  var callCounts: [CallKey: Int] = [:]
  /// In flight and latency per endpoint (RESTSession+CallFigures).
  var endpointFigures: [CallKey: EndpointFigures] = [:]
  var lastCounted: CallKey?
  var loop: EventLoop { http.loop }

  /// `environmentVariables` is where `auth.tokenEnv`, `$CREDENTIALS_DIRECTORY` and `$HOME`
  /// are looked up (tests pass their own).
  public init(
    configuration: RESTConfiguration, loop: EventLoop, environment: String? = nil,
    environmentVariables: (String) -> String? = Process.environment
  ) {
    self.configuration = configuration
    self.environment = environment ?? configuration.defaultEnvironment
    http = HTTPClient(loop: loop, maxConnections: configuration.maxInFlight)
    switch AuthTokenSources.resolve(configuration.auth, folder: configuration.folder, environment: environmentVariables)
    {
    case .token(let token, let source):
      authToken = token
      tokenSource = source
    case .none(let notes): tokenNotes = notes
    case .refused(let problem): tokenProblem = problem
    }
    values = Self.initialValues(configuration.values, environmentVariables)
    fillsValues = Self.fillsValues(configuration)
    warnOfProxies()
  }

  /// At start, the environments whose token a proxy variable keeps from going out
  /// (each request is refused too, with the same words).
  private func warnOfProxies() {
    guard configuration.auth != nil else { return }
    for (name, base) in configuration.environments {
      if case .refused(let reason) = http.proxies.route(base, carriesCredentials: true) {
        Log.warn("environment \(name) (\(base)): nothing with the auth token is sent: \(reason)")
      }
    }
  }

  // MARK: ConfigurableBackend

  public var environmentNames: [String] { configuration.environments.map(\.name) }

  /// What states are true of: the environment, its API and the values requests are
  /// asked with (another account's `{me}`); a warm start in another uses none.
  public var warmStatesScope: String {
    let values = self.values.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    return ([environment, baseURL] + values.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
  }

  public func selectEnvironment(_ name: String) -> Bool {
    guard configuration.baseURL(of: name) != nil else { return false }
    guard !name.utf8.elementsEqual(environment.utf8) else { return true }
    environment = name
    worldChanged(environment: true)
    return true
  }

  /// The token requests carry from now on (nil: none); one `AuthToken.problem` refuses
  /// is refused, the previous one kept.
  @discardableResult
  public func setAuthToken(_ token: String?) -> TokenChange {
    if let token, AuthToken.problem(token) != nil { return .refused }
    let same =
      switch (token, authToken) {
      case (nil, nil): true
      case (let new?, let old?): new.utf8.elementsEqual(old.utf8)
      default: false
      }
    guard !same else { return .unchanged }
    authToken = token
    worldChanged(environment: false, account: true)
    return .changed
  }

  // MARK: Failing without a call

  /// Values the service should have refused (an intent replayed from the outbox, a
  /// preload): failed without sending anything.
  func unsendable<T>(_ problem: PlaceholderProblem, _ completion: @escaping (Result<T, FollowFailure>) -> Void) {
    loop.execute { completion(.failure(FollowFailure(.rejected(status: 0), problem.reason))) }
  }

  func unsendable<T>(_ failure: FollowFailure, _ completion: @escaping (Result<T, FollowFailure>) -> Void) {
    loop.execute { completion(.failure(failure)) }
  }

  // MARK: Counting calls

  /// Counted by (kind, endpoint) pairs: building the `kind.endpoint` text on every
  /// call showed in profiles; it is built when `calls` is read.
  func count(_ kind: String, _ endpoint: String, _ delta: Int = 1) {
    let key = CallKey(kind: kind, endpoint: endpoint)
    callCounts[key, default: 0] += delta
    lastCounted = key
  }

  struct CallKey: Hashable {
    let kind: String
    let endpoint: String
  }
}
