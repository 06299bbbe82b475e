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

  /// The list of that name, or nil when the backend has none.
  func listDescription(_ name: String) -> ListDescription?

  /// One page of a list.
  func fetchListPage(_ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void)

  /// Whether entities of `kind` have a detail object to load (`getEntity`, preload).
  func hasDetail(kind: String) -> Bool

  /// The detail object of `key`, as compact JSON text.
  func fetchDetail(_ key: EntityKey, completion: @escaping (Result<String, FollowFailure>) -> Void)

  /// Why entities of `kind` cannot exist here (a kind the configuration does not
  /// describe), or nil: such requests are bad input, refused before any state changes.
  func kindProblem(_ kind: String) -> String?
}

extension FollowBackend {
  public var underlying: FollowBackend { self }

  /// Every backend has `following/<kind>`, from `followed(kind:)`.
  public func listDescription(_ name: String) -> ListDescription? {
    FollowingList.kind(of: name).map { ListDescription(dependsOn: [$0]) }
  }

  /// `following/<kind>` in pages of 50, ids in order; other lists are unknown.
  public func fetchListPage(
    _ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void
  ) {
    // Callers ask `listDescription` first: an unknown list never gets here.
    guard let kind = FollowingList.kind(of: request.key.name) else { preconditionFailure("no list \(request.key)") }
    let offset: Int
    if case .offset(let start) = request.page { offset = start } else { offset = 0 }
    followed(kind: kind) { result in
      completion(
        result.map { keys in
          let page = keys.dropFirst(offset).prefix(FollowingList.pageSize)
          let end = offset + page.count
          return ListPage(
            items: page.map { ListItem(key: $0, following: true) }, next: end < keys.count ? .offset(end) : nil)
        })
    }
  }

  public func hasDetail(kind: String) -> Bool { false }

  public func kindProblem(_ kind: String) -> String? { nil }

  /// Callers ask `hasDetail` first: a backend without details never gets here.
  public func fetchDetail(_ key: EntityKey, completion: @escaping (Result<String, FollowFailure>) -> Void) {
    preconditionFailure("\(key.kind) has no detail endpoint")
  }
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
