import HTTP
import JSON

/// Where follows are read and written: the local store, a REST API, or a simulation
/// wrapping either. Calls are made on the loop and complete on the loop, never inside
/// the call itself, so callers can change state after calling.
public protocol ModelBackend: AnyObject {
  /// Makes the backend's follow state of `key` equal `following`.
  func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void)

  /// Asks the backend whether `key` is followed.
  func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void)

  /// Why entities of `kind` cannot exist here (a kind the configuration does not
  /// describe), or nil: such requests are bad input, refused before any state changes.
  func kindProblem(_ kind: String) -> String?

  /// What else the backend does (lists, details, environments…). Read once, when the
  /// store is made: what a backend can do does not change while it runs.
  var capabilities: BackendCapabilities { get }

  /// Whether `setFollowing` only records the change in the state folder's journal,
  /// in the commit that holds the intent, and is taken back with it when that commit
  /// fails (the local backend): its calls may be made before the intent is durable.
  /// Every other backend's calls reach the outside, and wait for the commit.
  var commitsWithIntents: Bool { get }
}

extension ModelBackend {
  public var commitsWithIntents: Bool { false }

  public func kindProblem(_ kind: String) -> String? { nil }

  /// A backend of follows only.
  public var capabilities: BackendCapabilities { BackendCapabilities() }
}

/// The parts of a backend beyond follows, each nil when the backend has none.
public struct BackendCapabilities {
  public var lists: ListSource?
  public var details: DetailSource?
  public var attributes: AttributeSource?
  public var environments: ConfigurableBackend?
  public var placeholders: PlaceholderValidating?
  public var prioritised: PrioritisedBackend?
  public var statistics: BackendStatistics?

  public init(
    lists: ListSource? = nil, details: DetailSource? = nil, attributes: AttributeSource? = nil,
    environments: ConfigurableBackend? = nil, placeholders: PlaceholderValidating? = nil,
    prioritised: PrioritisedBackend? = nil, statistics: BackendStatistics? = nil
  ) {
    self.lists = lists
    self.details = details
    self.attributes = attributes
    self.environments = environments
    self.placeholders = placeholders
    self.prioritised = prioritised
    self.statistics = statistics
  }
}

/// The lists a backend serves (`fetchList`), with the same calling rules as
/// `ModelBackend`.
public protocol ListSource {
  /// The list of that name, or nil when the backend has none.
  func listDescription(_ name: String) -> ListDescription?

  /// The names `listDescription` knows, for the error that answers an unknown one; a
  /// family of names is given as its pattern (`following/{kind}`).
  var listNames: [String] { get }

  /// One page of a list `listDescription` knows.
  func fetchListPage(_ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void)
}

extension ListSource {
  public var listNames: [String] { [] }
}

/// The detail objects of entities (`getEntity`, preload), with the same calling rules
/// as `ModelBackend`.
public protocol DetailSource {
  /// Whether entities of `kind` have a detail object to load.
  func hasDetail(kind: String) -> Bool

  /// The detail object of `key`, as compact JSON text.
  func fetchDetail(_ key: EntityKey, completion: @escaping (Result<String, FollowFailure>) -> Void)
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
  /// nil removes the token. A token `AuthToken.problem` refuses is refused, the
  /// previous one kept.
  @discardableResult
  func setAuthToken(_ token: String?) -> TokenChange
  /// The named values `configure {values}` can set (`me`); none by default.
  var valueNames: [String] { get }
  /// A named value as it is set now (nil: not set).
  func value(_ name: String) -> String?
  /// Sets a named value (nil forgets it); the reason it cannot, or nil.
  func setValue(_ name: String, _ value: String?) -> String?
  /// The kinds and lists whose requests name any of the values `names`.
  func usesOfValues(_ names: [String]) -> ValueUses
}

extension ConfigurableBackend {
  public var valueNames: [String] { [] }
  public func value(_ name: String) -> String? { nil }
  public func setValue(_ name: String, _ value: String?) -> String? { "this backend has no values" }
  public func usesOfValues(_ names: [String]) -> ValueUses { ValueUses() }
}

/// What was fetched through a value (`{me}` in a path): the kinds whose states and the
/// lists whose items were read with it. Configuration names, not ids.
public struct ValueUses: Equatable, Sendable {
  public var kinds: Set<String> = []
  public var lists: Set<String> = []

  public init(kinds: Set<String> = [], lists: Set<String> = []) {
    self.kinds = kinds
    self.lists = lists
  }

  public var isEmpty: Bool { kinds.isEmpty && lists.isEmpty }
}

public enum TokenChange: Sendable {
  case changed, unchanged, refused
}

/// What a token must be to go out as a header value.
public enum AuthToken {
  /// Why `token` cannot be sent as a header value: a control byte (CR or LF would end
  /// the header and start another; NUL would cut it short in libcurl).
  public static func problem(_ token: String) -> String? {
    guard token.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
    return "must not contain control characters (CR, LF, NUL, …): it is sent as a header value"
  }
}

/// A backend's own figures, which `stats` shows under `backend`.
public protocol BackendStatistics: AnyObject {
  var httpStatistics: HTTPStatistics { get }
  /// The HTTP client's hold and queue, the first `limit` waiting requests listed.
  func holds(limit: Int) -> ModelInspection.Holds
}

/// What a backend over HTTP did: its client's counters, the transfers under way, and
/// the calls made per `kind.endpoint`.
public struct HTTPStatistics {
  public var counters: HTTPClient.Counters
  public var inFlight: Int
  public var callsByEndpoint: [String: Int]
  public var endpoints: [String: EndpointFigures]
  /// Where libcurl runs now, and how often it moved to its own thread
  /// (`HTTPClient.libcurlOnItsThread`, `libcurlMoves`).
  public var libcurlOnItsThread: Bool
  public var libcurlMoves: Int

  public init(
    counters: HTTPClient.Counters, inFlight: Int, callsByEndpoint: [String: Int],
    endpoints: [String: EndpointFigures] = [:], libcurlOnItsThread: Bool = false, libcurlMoves: Int = 0
  ) {
    self.counters = counters
    self.inFlight = inFlight
    self.callsByEndpoint = callsByEndpoint
    self.endpoints = endpoints
    self.libcurlOnItsThread = libcurlOnItsThread
    self.libcurlMoves = libcurlMoves
  }
}

extension ConfigurableBackend {
  /// Why `value` cannot be set as `name`, without setting it (nil: it can).
  public func setValueProblem(_ name: String, _ value: String) -> String? {
    guard valueNames.contains(where: { $0.hasSameBytes(as: name) }) else {
      let known = valueNames.joined(separator: ", ")
      return "is not a configured value (configured: \(known.isEmpty ? "none" : known))"
    }
    return ConfiguredValue.problem(value)
  }
}
