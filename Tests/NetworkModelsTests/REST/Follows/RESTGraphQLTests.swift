import EventLoop
import HTTP
import JSON
import Posix
import TestSupport
import Testing

@testable import NetworkModels

/// The GraphQL body form, errors inside a 200, connection paging and lists that do not
/// advance, against a loopback server that answers like a GraphQL endpoint.
final class GraphQLFixture: StoreDriving {
  static let configuration = #"""
    {
      "environments": {"test": "BASE"},
      "kinds": {"artist": {
        "follow": {"path": "/v2", "graphql": {
          "query": "mutation FollowArtist($input: FollowArtistInput!) { followArtist(input: $input) { artist { isFollowed } } }",
          "variables": {"input": {"artistID": "{id}", "unfollow": false, "n": 3}}, "operationName": "FollowArtist"},
          "errors": {"pointer": "/errors", "status": "/extensions/httpStatusCodes/0"}},
        "unfollow": {"method": "POST", "path": "/v2", "graphql": {
          "query": "mutation { followArtist(input: {artistID: $id, unfollow: true}) { clientMutationId } } # {id}",
          "variables": {"id": "{id}"}}},
        "state": {"path": "/v2", "graphql": {"query": "query($id: String!) { artist(id: $id) { isFollowed } }",
                  "variables": {"id": "{id}"}}, "following": {"pointer": "/data/artist/isFollowed"}}
      },
      "gene": {
        "follow": {"method": "PUT", "path": "/genes/{id}", "errors": "/problems"},
        "unfollow": {"method": "DELETE", "path": "/genes/{id}"},
        "state": {"path": "/v2", "graphql": {"query": "query($ids: [String]) { genes(ids: $ids) { id } }",
                  "variables": {"ids": "{ids}"}}, "batch": {"items": "/data/genes", "id": "/id"}}
      }},
      "lists": {
        "follows": {"path": "/v2", "graphql": {"query": "query($after: String, $first: Int) { me { id } }"},
          "paging": {"style": "connection", "after": "cursor", "first": "count", "size": 2,
                     "pageInfo": "/data/me/artists/pageInfo"},
          "items": "/data/me/artists/edges", "item": {"kind": "artist", "id": "/node/internalID", "following": true}},
        "byPage": {"method": "GET", "path": "/page", "paging": {"style": "page", "size": 2},
          "item": {"kind": "artist", "id": "/id"}},
        "byCursor": {"method": "GET", "path": "/cursor", "paging": {"style": "cursor", "next": "/next"},
          "items": "/data", "item": {"kind": "artist", "id": "/id"}}
      }
    }
    """#

  let loop: EventLoop
  let server: LoopbackHTTPServer
  let backend: RESTBackend
  let store: FollowStore
  let lists: ListStore

  init(edit: (String) -> String = { $0 }) throws {
    loop = try EventLoop()
    server = try LoopbackHTTPServer(loop: loop)
    let configuration = try RESTConfiguration.parse(
      edit(Self.configuration).replacingOccurrences("BASE", server.baseURL))
    backend = RESTBackend(configuration: configuration, loop: loop)
    store = FollowStore(loop: loop, backend: backend, policy: RetryPolicy(maxRetries: 0))
    lists = ListStore(store: store)
  }

  func fetch(_ name: String, _ page: PageRequest) throws -> ListStore.Snapshot {
    var result: ListStore.Snapshot?
    lists.fetch(ListKey(name: name), page: page) { result = $0 }
    try run { result != nil }
    return try #require(result)
  }

  /// The JSON body of the `index`th request.
  func body(_ index: Int) throws -> JSON { try JSON.parse(server.requests[index].body) }

  /// A connection page of `ids`, with `pageInfo`.
  static func page(_ ids: [String], next: String?) -> LoopbackHTTPServer.Action {
    let edges = ids.map { #"{"node":{"internalID":"\#($0)"}}"# }.joined(separator: ",")
    let info = next.map { #"{"hasNextPage":true,"endCursor":"\#($0)"}"# } ?? #"{"hasNextPage":false,"endCursor":null}"#
    return .respond(status: 200, body: #"{"data":{"me":{"artists":{"edges":[\#(edges)],"pageInfo":\#(info)}}}}"#)
  }
}

@Suite struct RESTGraphQLTests {
  let banksy = EntityKey(kind: "artist", id: "banksy")

  // MARK: The body form

  @Test func aGraphQLFollowPostsTheQueryAsWrittenAndTheVariablesFilled() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: #"{"data":{"followArtist":{"artist":{"isFollowed":true}}}}"#)
    }
    let state = try f.set(banksy, true).get()
    #expect(state.confirmed == true)
    let request = try #require(f.server.requests.first)
    #expect(request.method == "POST" && request.path == "/v2")
    #expect(request.headers["content-type"] == "application/json")
    let body = try f.body(0)
    #expect(
      body["query"]?.string?.hasPrefix("mutation FollowArtist($input: FollowArtistInput!) { followArtist") == true)
    #expect(body["operationName"]?.string == "FollowArtist")
    let input = try #require(body["variables"]?["input"])
    #expect(input["artistID"]?.string == "banksy")
    #expect(input["unfollow"]?.bool == false, "booleans stay booleans")
    #expect(input["n"]?.integer == 3, "numbers stay numbers")
  }

  @Test func theQueryTextIsNeverFilled() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: #"{"data":{}}"#) }
    _ = try f.set(banksy, false)
    let body = try f.body(0)
    #expect(
      body["query"]?.string
        == "mutation { followArtist(input: {artistID: $id, unfollow: true}) { clientMutationId } } # {id}",
      "a query's text is never a template")
    #expect(body["variables"]?["id"]?.string == "banksy")
    #expect(body["operationName"] == nil, "no operationName unless configured")
  }

  @Test func idsInVariablesBecomeAnArray() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: #"{"data":{"genes":[{"id":"pop-art"}]}}"#) }
    var results: [String: FollowAnswer] = [:]
    for id in ["pop-art", "minimalism"] {
      f.backend.fetchFollowing(EntityKey(kind: "gene", id: id)) { results[id] = try? $0.get() }
    }
    try f.run { results.count == 2 }
    #expect(results == ["pop-art": true, "minimalism": false])
    let ids = try #require(try f.body(0)["variables"]?["ids"])
    #expect(ids.elements.compactMap(\.string) == ["pop-art", "minimalism"])
  }

  // MARK: Errors inside a 200

  @Test func errorsInA200AreARefusalWithTheirMessage() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in
      .respond(status: 200, body: #"{"errors":[{"message":"Artist Not Found","path":["followArtist"]}],"data":null}"#)
    }
    let failure = try #require(try f.set(banksy, true).failure)
    #expect(failure.failure.kind == .rejected(status: 200))
    #expect(failure.failure.message.contains("Artist Not Found"))
    #expect(failure.state.following == nil && failure.state.confirmed == nil, "rolled back, never confirmed")
    #expect(f.server.requests.count == 1, "a refusal is not sent again")
  }

  @Test func aPartialAnswerWithErrorsFailsToo() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in
      .respond(
        status: 200,
        body: #"{"data":{"followArtist":{"artist":{"isFollowed":true}}},"errors":[{"message":"partial"}]}"#)
    }
    #expect(try f.set(banksy, true).failure?.failure.message.contains("partial") == true)
  }

  @Test(arguments: [#"{"data":{"x":1},"errors":[]}"#, #"{"data":{"x":1},"errors":null}"#, #"{"data":{"x":1}}"#])
  func noErrorsIsASuccess(body: String) throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: body) }
    #expect(try f.set(banksy, true).get().confirmed == true)
  }

  @Test func aNonJSONAnswerIsNotConfirmed() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: "<html>ok</html>") }
    let failure = try #require(try f.set(banksy, true).failure)
    #expect(failure.failure.kind == .unavailable && failure.failure.message.contains("not JSON"))
    #expect(failure.state.confirmed == nil)
  }

  @Test func anErrorsPointerOnAPlainEndpoint() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 201, body: #"{"problems":{"message":"gene is archived"}}"#) }
    let failure = try #require(try f.set(EntityKey(kind: "gene", id: "pop-art"), true).failure)
    #expect(failure.failure.kind == .rejected(status: 201) && failure.failure.message.contains("gene is archived"))
  }

  @Test(arguments: [
    (#"{"httpStatusCodes":[502]}"#, FollowFailure.Kind.unavailable),
    (#"{"httpStatusCodes":[401]}"#, .unauthorized(status: 401)),
    (#"{"httpStatusCodes":[404,500]}"#, .rejected(status: 404)),
    (#"{"httpStatusCodes":["502"]}"#, .rejected(status: 200)),
    (#"{"httpStatusCodes":[99]}"#, .rejected(status: 200)),
    (#"{}"#, .rejected(status: 200)),
  ])
  func anErrorsStatusClassifiesTheFailure(extensions: String, kind: FollowFailure.Kind) throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in
      .respond(status: 200, body: #"{"errors":[{"message":"m","extensions":\#(extensions)}],"data":null}"#)
    }
    var result: Result<FollowAnswer, FollowFailure>?
    f.backend.setFollowing(banksy, true) { result = $0 }
    try f.run { result != nil }
    #expect(result?.failure?.kind == kind)
  }

  /// An error standing for a 403 is judged as a 403 answer is (`forbidden`, the standard
  /// one here): by its message, a refusal unless it is about the credentials.
  @Test(arguments: [
    ("You cannot follow this artist", FollowFailure.Kind.rejected(status: 403)),
    ("The access token lacks the follow scope", .unauthorized(status: 403)),
    ("", .unauthorized(status: 403)),
  ])
  func anErrorStandingForA403IsJudgedByItsMessage(message: String, kind: FollowFailure.Kind) throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in
      .respond(
        status: 200,
        body: #"{"errors":[{"message":"\#(message)","extensions":{"httpStatusCodes":[403]}}],"data":null}"#)
    }
    var result: Result<FollowAnswer, FollowFailure>?
    f.backend.setFollowing(banksy, true) { result = $0 }
    try f.run { result != nil }
    #expect(result?.failure?.kind == kind)
  }

  @Test func errorsComeBeforeAStatusMeaning() throws {
    let f = try GraphQLFixture(edit: {
      $0.replacingOccurrences(#""errors": "/problems"}"#, #""errors": "/problems", "onStatus": {"200": "following"}}"#)
    })
    let gene = EntityKey(kind: "gene", id: "pop-art")
    f.server.handler = { _ in .respond(status: 200, body: #"{"problems":["archived"]}"#) }
    #expect(try f.set(gene, true).failure?.failure.message.contains("archived") == true)
    f.server.handler = { _ in .respond(status: 204) }
    #expect(try f.set(gene, true).get().confirmed == true, "a 204 has no content, so no errors")
  }

  // MARK: State by query

  @Test func theStateIsReadByQuery() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: #"{"data":{"artist":{"isFollowed":true}}}"#) }
    #expect(try f.read(banksy).get().confirmed == true)
    #expect(try f.body(0)["variables"]?["id"]?.string == "banksy")
  }

  @Test(arguments: [#"{"data":null}"#, #"{"data":{"artist":null}}"#, #"{"data":null,"errors":[{"message":"x"}]}"#])
  func aStateAnswerWithoutTheFlagIsAFailure(body: String) throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: body) }
    #expect(try f.read(banksy).failure != nil)
  }

  // MARK: Connection paging

  @Test func aConnectionIsPagedToTheEndWithTheCursorInTheVariables() throws {
    let f = try GraphQLFixture()
    f.server.handler = { request in
      let cursor = (try? JSON.parse(request.body))?["variables"]?["cursor"]?.string
      switch cursor {
      case nil: return GraphQLFixture.page(["a", "b"], next: "c1")
      case "c1": return GraphQLFixture.page(["c", "d"], next: "c2")
      default: return GraphQLFixture.page(["e"], next: nil)
      }
    }
    var snapshot = try f.fetch("follows", .first)
    while snapshot.hasMore && f.server.requests.count < 10 { snapshot = try f.fetch("follows", .next) }
    #expect(snapshot.phase == .loaded && snapshot.items.map(\.key.id) == ["a", "b", "c", "d", "e"])
    #expect(f.server.requests.count == 3)
    #expect(try f.body(0)["variables"]?["cursor"] == nil)
    #expect(try f.body(0)["variables"]?["count"]?.integer == 2)
    #expect(try f.body(2)["variables"]?["cursor"]?.string == "c2")
  }

  @Test(arguments: [
    #"{"data":{"me":{"artists":{"edges":[]}}}}"#,
    #"{"data":{"me":{"artists":{"edges":[],"pageInfo":{"endCursor":"x"}}}}}"#,
    #"{"data":{"me":{"artists":{"edges":[],"pageInfo":{"hasNextPage":true,"endCursor":""}}}}}"#,
  ])
  func aPageInfoThatDoesNotSayWhatIsNextFailsThePage(body: String) throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in .respond(status: 200, body: body) }
    let snapshot = try f.fetch("follows", .first)
    #expect(snapshot.phase == .failure && snapshot.error?.kind == .unavailable)
  }

  // MARK: Lists that do not advance

  @Test func anEndCursorThatDoesNotAdvanceEndsTheList() throws {
    let f = try GraphQLFixture()
    f.server.handler = { _ in GraphQLFixture.page(["a", "b"], next: "same") }
    _ = try f.fetch("follows", .first)
    let failed = try f.fetch("follows", .next)
    #expect(failed.phase == .failure && failed.error?.message.contains("did not advance") == true)
    #expect(failed.items.map(\.key.id) == ["a", "b"], "what was loaded stays")
    #expect(f.server.requests.count == 2)
    #expect(f.lists.counters.pagingFailures == 1)
  }

  @Test func aCursorSeenEarlierInTheWalkEndsTheList() throws {
    let f = try GraphQLFixture()
    f.server.handler = { request in
      let cursor = (try? JSON.parse(request.body))?["variables"]?["cursor"]?.string
      switch cursor {
      case nil: return GraphQLFixture.page(["a"], next: "A")
      case "A": return GraphQLFixture.page(["b"], next: "B")
      default: return GraphQLFixture.page(["c"], next: "A")
      }
    }
    _ = try f.fetch("follows", .first)
    _ = try f.fetch("follows", .next)
    let failed = try f.fetch("follows", .next)
    #expect(failed.phase == .failure && failed.error?.message.contains("was loaded before") == true)
    #expect(f.server.requests.count == 3)
  }

  @Test func aPageOfThePreviousPagesItemsEndsTheList() throws {
    let f = try GraphQLFixture()
    // A server that ignores the page number answers the same page for ever.
    f.server.handler = { _ in .respond(status: 200, body: #"[{"id":"a"},{"id":"b"}]"#) }
    let first = try f.fetch("byPage", .first)
    #expect(first.hasMore)
    let failed = try f.fetch("byPage", .next)
    #expect(failed.phase == .failure && failed.error?.message.contains("same items as the page before") == true)
    #expect(failed.items.count == 2)
    // The same items again may be a head that moved by one page: walked again once first.
    #expect(f.server.requests.count == 4)
    #expect(f.lists.counters.shifts == 1)
  }

  @Test func aCursorWithBracesIsSentAsItCame() throws {
    let f = try GraphQLFixture()
    // An opaque cursor may be JSON: its braces are no template.
    let cursor = #"{"o":{"p":{{1}}}}"#
    f.server.handler = { request in
      request.query.isEmpty
        ? .respond(status: 200, body: #"{"data":[{"id":"a"}],"next":"{\"o\":{\"p\":{{1}}}}"}"#)
        : .respond(status: 200, body: #"{"data":[{"id":"b"}]}"#)
    }
    _ = try f.fetch("byCursor", .first)
    let second = try f.fetch("byCursor", .next)
    #expect(second.items.map(\.key.id) == ["a", "b"])
    #expect(f.server.requests.last?.query == "cursor=" + Template.percentEncode(cursor))
  }

  // MARK: Configuration

  @Test(arguments: [
    (#""follow": {"path": "/v2", "method": "GET", "graphql": {"query": "q"}}"#, "/kinds/artist/follow/method"),
    (#""follow": {"path": "/v2", "graphql": {"query": "q"}, "json": {}}"#, "/kinds/artist/follow/json"),
    (
      #""follow": {"path": "/v2", "graphql": {"query": "q", "variables": []}}"#,
      "/kinds/artist/follow/graphql/variables"
    ),
    (#""follow": {"path": "/v2", "graphql": {"query": " "}}"#, "/kinds/artist/follow/graphql/query"),
    (
      #""follow": {"path": "/v2", "graphql": {"query": "q", "variables": {"x": "{nope}"}}}"#,
      "/kinds/artist/follow/graphql/variables/x"
    ),
    (
      #""follow": {"path": "/v2", "graphql": {"query": "q", "extensions": {}}}"#,
      "/kinds/artist/follow/graphql/extensions"
    ),
    (#""follow": {"method": "POST", "path": "/v2", "errors": ""}"#, "/kinds/artist/follow/errors"),
    (#""follow": {"path": "/v2"}"#, "/kinds/artist/follow"),
    (
      #""follow": {"method": "POST", "path": "/v2", "errors": {"pointer": "/e", "code": "/c"}}"#,
      "/kinds/artist/follow/errors/code"
    ),
    (#""follow": {"method": "POST", "path": "/v2", "errors": {"status": "/s"}}"#, "/kinds/artist/follow/errors"),
    (#""follow": {"method": "POST", "path": "/v2", "errors": {"pointer": ""}}"#, "/kinds/artist/follow/errors/pointer"),
    (
      #""follow": {"method": "POST", "path": "/v2", "errors": {"pointer": "/e", "status": "s"}}"#,
      "/kinds/artist/follow/errors/status"
    ),
  ])
  func badGraphQLEndpointsAreRefusedWithTheirPath(follow: String, path: String) throws {
    let text = #"""
      {"environments": {"t": "http://127.0.0.1:1"}, "kinds": {"artist": {
        \#(follow),
        "unfollow": {"method": "DELETE", "path": "/f/{id}"}, "state": {"method": "GET", "path": "/f/{id}"}}}}
      """#
    #expect(throws: RESTConfigurationError.self) { try RESTConfiguration.parse(text) }
    do {
      _ = try RESTConfiguration.parse(text)
    } catch {
      #expect(error.path == path, "\(error)")
    }
  }

  @Test(arguments: [
    (#"{"style": "connection", "pageInfo": "/p"}"#, false, "/lists/l/paging"),
    (#"{"style": "connection", "first": "n", "pageInfo": "/p"}"#, true, "/lists/l/paging"),
    (#"{"style": "connection", "after": "$after", "pageInfo": "/p"}"#, true, "/lists/l/paging/after"),
    (#"{"style": "connection"}"#, true, "/lists/l/paging"),
  ])
  func badConnectionPagingIsRefused(paging: String, graphql: Bool, path: String) throws {
    let body = graphql ? #""graphql": {"query": "q"}"# : #""method": "GET""#
    let text = #"""
      {"environments": {"t": "http://127.0.0.1:1"}, "kinds": {"artist": {
        "follow": {"method": "POST", "path": "/f/{id}"}, "unfollow": {"method": "DELETE", "path": "/f/{id}"},
        "state": {"method": "GET", "path": "/f/{id}"}}},
       "lists": {"l": {"path": "/v2", \#(body), "paging": \#(paging), "item": {"kind": "artist", "id": "/id"}}}}
      """#
    do {
      _ = try RESTConfiguration.parse(text)
      Issue.record("accepted \(paging)")
    } catch {
      #expect(error.path == path, "\(error)")
    }
  }

  @Test func theDefaultsOfAGraphQLEndpoint() throws {
    let configuration = try RESTConfiguration.parse(
      GraphQLFixture.configuration.replacingOccurrences("BASE", "http://127.0.0.1:1"))
    let artist = try #require(configuration.kinds["artist"])
    #expect(artist.follow.method == "POST" && artist.follow.errors?.pointer.description == "/errors")
    #expect(configuration.kinds["gene"]?.unfollow.errors == nil, "no errors pointer unless configured or GraphQL")
    #expect(configuration.kinds["gene"]?.follow.errors?.pointer.description == "/problems")
  }
}

@Suite struct TemplateBraceTests {
  @Test func doubledBracesAreLiteral() {
    let values = ["id": "banksy"]
    #expect(Template.fill("{{id}}", values, encode: { $0 }) == "{id}")
    #expect(Template.fill("{{{id}}}", values, encode: { $0 }) == "{banksy}")
    #expect(Template.fill(#"{{"a": "{id}"}}"#, values, encode: { $0 }) == #"{"a": "banksy"}"#)
    #expect(Template.fill("x}}y{{", values, encode: { $0 }) == "x}y{")
    #expect(Template.fill("/a/{id}/b", values, encode: { $0.uppercased() }) == "/a/BANKSY/b")
    #expect(Template.fill("plain", values, encode: { $0 }) == "plain")
    #expect(Template.fill("a}b", values, encode: { $0 }) == "a}b", "a lone brace stays")
  }

  @Test func doubledBracesAreNoPlaceholder() {
    #expect(Template.placeholders(in: "{{x}}") == [])
    #expect(Template.placeholders(in: "{{{id}}}") == ["id"])
    #expect(Template.placeholders(in: "{kind}/{{}}/{id}") == ["kind", "id"])
  }

  @Test func checkConfigAcceptsEscapedBraces() throws {
    let configuration = try RESTConfiguration.parse(
      #"""
      {"environments": {"t": "http://127.0.0.1:1"}, "kinds": {"artist": {
        "follow": {"method": "POST", "path": "/f/{id}", "query": {"q": "{{x}}"}, "json": {"t": "{{{id}}}"}},
        "unfollow": {"method": "DELETE", "path": "/f/{id}", "form": {"f": "{{nope}}"}},
        "state": {"method": "GET", "path": "/f/{id}"}}}}
      """#)
    let backend = RESTBackend(configuration: configuration, loop: try EventLoop())
    let artist = try #require(configuration.kinds["artist"])
    let follow = backend.session.request(artist.follow, kind: "artist", id: "banksy")
    #expect(follow.url == "http://127.0.0.1:1/f/banksy?q=%7Bx%7D")
    #expect(String(decoding: follow.body ?? [], as: UTF8.self) == #"{"t":"{banksy}"}"#)
    let unfollow = backend.session.request(artist.unfollow, kind: "artist", id: "banksy")
    #expect(String(decoding: unfollow.body ?? [], as: UTF8.self) == "f=%7Bnope%7D")
  }
}
