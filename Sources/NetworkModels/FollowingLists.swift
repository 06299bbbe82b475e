import EventLoop

/// `following/<kind>` of a backend that can list what it follows: every followed
/// entity of the kind, in pages of 50, ids in order.
public struct FollowingLists: ListSource {
  public typealias Followed = (_ kind: String, _ completion: @escaping (Result<[EntityKey], FollowFailure>) -> Void) ->
    Void

  private let loop: EventLoop
  private let followed: Followed

  public init(loop: EventLoop, followed: @escaping Followed) {
    self.loop = loop
    self.followed = followed
  }

  public func listDescription(_ name: String) -> ListDescription? {
    FollowingList.kind(of: name).map { ListDescription(dependsOn: [$0]) }
  }

  /// Any kind's: every name of the form is a list.
  public var listNames: [String] { [FollowingList.prefix + "{kind}"] }

  public func fetchListPage(
    _ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void
  ) {
    guard let kind = FollowingList.kind(of: request.key.name) else {
      return loop.execute { completion(.failure(FollowFailure(.unknownKind, "no list \(request.key.name)"))) }
    }
    let offset: Int
    if case .offset(let start) = request.page { offset = start } else { offset = 0 }
    followed(kind) { result in
      completion(
        result.map { keys in
          let page = keys.dropFirst(offset).prefix(FollowingList.pageSize)
          let end = offset + page.count
          return ListPage(
            items: page.map { ListItem(key: $0, following: true) }, next: end < keys.count ? .offset(end) : nil)
        })
    }
  }
}
