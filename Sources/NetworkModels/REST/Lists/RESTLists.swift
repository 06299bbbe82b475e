import EventLoop
import HTTP
import JSON

/// The lists a configuration describes, page by page, over the session's HTTP client.
///
/// Must be used on the loop's thread.
public final class RESTLists: ListSource {
  public let session: RESTSession

  public init(session: RESTSession) { self.session = session }

  public func listDescription(_ name: String) -> ListDescription? {
    guard let list = session.configuration.lists[name] else { return nil }
    return ListDescription(dependsOn: list.dependsOn, requiredParams: list.params)
  }

  public var listNames: [String] { Array(session.configuration.lists.keys) }

  public func fetchListPage(
    _ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void
  ) {
    guard let list = session.configuration.lists[request.key.name] else {
      return session.loop.execute { completion(.failure(FollowFailure(.unknownKind, "no list \(request.key.name)"))) }
    }
    if let problem = session.configuration.paramsProblem(list: request.key.name, params: request.params) {
      return session.unsendable(problem, completion)
    }
    if let unset = session.unsetValue(list.endpoint) { return session.unsendable(unset, completion) }
    if let failure = session.heldBeyondBudget(kind: nil) {
      return session.loop.execute { completion(.failure(failure)) }
    }
    var http = session.request(list.endpoint, values: request.params)
    var extra: [(String, String)] = []
    switch (list.paging, request.page) {
    case (.page(let pageParameter, let sizeParameter, let size, let first), let token):
      var number = first
      if case .number(let next)? = token { number = next }
      extra = [(pageParameter, String(number)), (sizeParameter, String(size))]
    case (.offset(let offsetParameter, let limitParameter, let limit, let overlap), let token):
      var offset = 0
      if case .offset(let next)? = token { offset = next }
      extra = [(offsetParameter, String(Self.asked(offset, overlap: overlap))), (limitParameter, String(limit))]
    case (.cursor(let parameter, _, let sizeParameter, let size), let token):
      if case .cursor(let cursor)? = token { extra.append((parameter, cursor)) }
      if let sizeParameter, let size { extra.append((sizeParameter, String(size))) }
    case (.link, .url(let url)?):
      guard Self.sameOrigin(url, http.url) else {
        let message =
          "the next page of \(request.key) is on another origin (\(url)): not followed, the token stays home"
        return session.loop.execute { completion(.failure(FollowFailure(.rejected(status: 0), message))) }
      }
      http.url = url
    case (.connection(let after, let first, let size, _), let token):
      var variables: [(String, JSON)] = []
      if case .cursor(let cursor)? = token { variables.append((after, .string(cursor))) }
      if let first, let size { variables.append((first, .integer(size))) }
      if case .graphql(let graphql)? = list.endpoint.body {
        http.body = graphql.encoded(request.params, ids: [], extra: variables)
      }
    case (.none, _), (.link, _):
      break
    }
    if !extra.isEmpty {
      // Values from the answer, not templates: a cursor's "}}" is sent as it came.
      let query = extra.map { Template.percentEncode($0.0, keep: "[]") + "=" + Template.percentEncode($0.1) }
        .joined(separator: "&")
      http.url += (http.url.contains("?") ? "&" : "?") + query
    }
    session.count("list", request.key.name)
    let world = session.world
    http.maxHoldWait = session.maxHoldWait(kind: nil)
    session.send(http, list.endpoint) { [weak self] result in
      guard let self else { return }
      // A page of the old world is not this one's: asked again with the new token or
      // values (the list store starts over a list a changed value or environment reached).
      guard self.session.world == world else {
        return self.session.answeredInOldWorld(world, completion) {
          self.fetchListPage(request, completion: completion)
        }
      }
      completion(
        self.session.answer(result, list.endpoint) { response in
          RESTLists.readPage(response, list, request.page, url: http.url)
        })
    }
  }
}
