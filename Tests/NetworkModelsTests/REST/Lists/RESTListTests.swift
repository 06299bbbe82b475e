import EventLoop
import HTTP
import JSON
import Posix
import TestSupport
import Testing

@testable import NetworkModels

/// Lists of the REST backend, one per paging style, against a loopback server that
/// serves 45 artists named so that sections show.
final class RESTListFixture: LoopDriving {
  let loop: EventLoop
  let server: LoopbackHTTPServer
  let backend: RESTBackend
  let store: FollowStore
  let lists: ListStore
  static let names = (0..<45).map { index in "\(["Ai", "Banksy", "Basquiat", "Kaws"][index % 4]) \(index)" }

  init() throws {
    loop = try EventLoop()
    server = try LoopbackHTTPServer(loop: loop)
    let configuration = try RESTConfiguration.parse(
      #"""
      {
        "environments": {"test": "\#(server.baseURL)"},
        "kinds": {"artist": {
          "follow": {"method": "POST", "path": "/f/{id}"}, "unfollow": {"method": "DELETE", "path": "/f/{id}"},
          "state": {"method": "GET", "path": "/f/{id}"},
          "detail": {"method": "GET", "path": "/artist/{id}"}
        }},
        "lists": {
          "byPage": {"method": "GET", "path": "/page", "paging": {"style": "page", "size": 20},
                     "item": {"kind": "artist", "id": "/id", "following": true, "attributes": "", "keep": ["name"]},
                     "sections": {"pointer": "/name", "by": "firstLetter"}, "dependsOn": ["artist"]},
          "byOffset": {"method": "GET", "path": "/offset", "paging": {"style": "offset", "limit": 20},
                       "items": "/data", "item": {"kind": "artist", "id": "/id", "following": {"pointer": "/f"}}},
          "byCursor": {"method": "GET", "path": "/cursor", "paging": {"style": "cursor", "next": "/next"},
                       "items": "/data", "item": {"kind": "artist", "id": "/id"}},
          "byLink": {"method": "GET", "path": "/link", "paging": {"style": "link"}, "item": {"kind": "artist", "id": "/id"}},
          "ofGene": {"method": "GET", "path": "/genes/{gene}/artists", "params": ["gene"],
                     "item": {"kind": "artist", "id": "/id"}}
        }
      }
      """#)
    backend = RESTBackend(configuration: configuration, loop: loop)
    store = FollowStore(loop: loop, backend: backend)
    lists = ListStore(store: store)
    let base = server.baseURL
    server.handler = { request in
      let query = Dictionary(
        request.query.split(separator: "&").map { pair -> (String, String) in
          let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
          return (parts[0], parts.count > 1 ? parts[1] : "")
        }, uniquingKeysWith: { $1 })
      func artists(_ range: Range<Int>) -> String {
        range.clamped(to: 0..<45).map {
          #"{"id":"a\#($0)","name":"\#(RESTListFixture.names[$0])","f":\#($0 % 2 == 0)}"#
        }
        .joined(separator: ",")
      }
      switch request.path {
      case "/page":
        let page = Int(query["page"] ?? "1")!
        let size = Int(query["size"] ?? "20")!
        return .respond(status: 200, body: "[" + artists((page - 1) * size..<page * size) + "]")
      case "/offset":
        let offset = Int(query["offset"] ?? "0")!
        return .respond(status: 200, body: #"{"data":[\#(artists(offset..<offset + 20))]}"#)
      case "/cursor":
        let start = Int(query["cursor"] ?? "0")!
        let next = start + 20 < 45 ? #""\#(start + 20)""# : "null"
        return .respond(status: 200, body: #"{"data":[\#(artists(start..<start + 20))],"next":\#(next)}"#)
      case "/link":
        let start = Int(query["from"] ?? "0")!
        let link =
          start + 20 < 45
          ? [("Link", #"<\#(base)/link?from=\#(start + 20)>; rel="next", <\#(base)/link>; rel="first""#)] : []
        return .respond(status: 200, headers: link, body: "[" + artists(start..<start + 20) + "]")
      case "/genes/pop%20art/artists":
        return .respond(status: 200, body: "[" + artists(0..<3) + "]")
      default:
        return .respond(status: 404)
      }
    }
  }

  func fetch(_ name: String, _ page: PageRequest, params: [String: String] = [:]) throws -> ListStore.Snapshot {
    var result: ListStore.Snapshot?
    let key = ListKey(name: name, paramsText: params.isEmpty ? "{}" : "\(params)")
    lists.fetch(key, params: params, page: page) { result = $0 }
    try run { result != nil }
    return try #require(result)
  }

  func pageToTheEnd(_ name: String) throws -> ListStore.Snapshot {
    var snapshot = try fetch(name, .first)
    var pages = 1
    while snapshot.hasMore && pages < 10 {
      snapshot = try fetch(name, .next)
      pages += 1
    }
    return snapshot
  }
}

@Suite struct RESTListTests {
  let all = (0..<45).map { "a\($0)" }

  @Test(arguments: ["byPage", "byOffset", "byCursor", "byLink"])
  func pagingToTheEnd(list: String) throws {
    let f = try RESTListFixture()
    let snapshot = try f.pageToTheEnd(list)
    #expect(snapshot.phase == .loaded && !snapshot.hasMore)
    #expect(snapshot.items.map(\.key.id) == all)
    #expect(f.server.requests.count == 3)
  }

  @Test func pageNumbersSizesAndKeptAttributes() throws {
    let f = try RESTListFixture()
    _ = try f.pageToTheEnd("byPage")
    #expect(f.server.requests.map(\.query) == ["page=1&size=20", "page=2&size=20", "page=3&size=20"])
    let first = try #require(f.lists.snapshot(ListKey(name: "byPage"))?.items.first)
    #expect(first.attributes == #"{"name":"Ai 0"}"#, "only the kept fields")
    #expect(first.following == true)
  }

  @Test func sectionsByFirstLetter() throws {
    let f = try RESTListFixture()
    let snapshot = try f.fetch("byPage", .first)
    #expect(snapshot.items.map(\.sectionTitle).prefix(4) == ["A", "B", "B", "K"])
    #expect(snapshot.sections.prefix(3).map(\.title) == ["A", "B", "K"])
    #expect(snapshot.sections[1].start == 1 && snapshot.sections[1].count == 2)
  }

  @Test func theFollowFlagOfEachItemSeedsTheStore() throws {
    let f = try RESTListFixture()
    _ = try f.fetch("byOffset", .first)
    #expect(f.store.state(EntityKey(kind: "artist", id: "a4")).confirmed == true)
    #expect(f.store.state(EntityKey(kind: "artist", id: "a5")).confirmed == false)
    #expect(f.server.requests.first?.query == "offset=0&limit=20")
  }

  @Test func listParamsFillThePath() throws {
    let f = try RESTListFixture()
    let snapshot = try f.fetch("ofGene", .first, params: ["gene": "pop art"])
    #expect(snapshot.items.count == 3 && !snapshot.hasMore)
    #expect(f.server.requests.first?.path == "/genes/pop%20art/artists")
  }

  @Test func aFailedPageIsRetriedWithTheSamePage() throws {
    let f = try RESTListFixture()
    _ = try f.fetch("byPage", .first)
    _ = try f.fetch("byPage", .next)
    let handler = f.server.handler
    f.server.handler = { _ in .respond(status: 503) }
    let failed = try f.fetch("byPage", .next)
    #expect(failed.phase == .failure && failed.items.count == 40 && failed.hasMore)
    #expect(failed.error?.kind == .unavailable)
    f.server.handler = handler
    let retried = try f.fetch("byPage", .next)
    #expect(retried.phase == .loaded && retried.items.count == 45 && !retried.hasMore)
    #expect(f.server.requests.suffix(2).map(\.query) == ["page=3&size=20", "page=3&size=20"])
  }

  @Test func aNextLinkToAnotherOriginIsNotFollowed() throws {
    let f = try RESTListFixture()
    let handler = f.server.handler
    f.server.handler = { request in
      request.query.isEmpty
        ? .respond(
          status: 200, headers: [("Link", #"<http://elsewhere.example/link?from=20>; rel="next""#)], body: "[]")
        : handler(request)
    }
    let first = try f.fetch("byLink", .first)
    #expect(first.hasMore)
    let next = try f.fetch("byLink", .next)
    #expect(next.phase == .failure && next.error?.message.contains("another origin") == true)
    #expect(f.server.requests.count == 1)
  }

  @Test func aTotalAndAnOverlapAreReadFromTheAnswer() throws {
    let configuration = try RESTConfiguration.parse(
      #"""
      {"environments": {"t": "http://127.0.0.1:1"},
       "kinds": {"artist": {"follow": {"method": "POST", "path": "/f/{id}"},
                            "unfollow": {"method": "DELETE", "path": "/f/{id}"}, "state": {"method": "GET", "path": "/f/{id}"}}},
       "lists": {"o": {"method": "GET", "path": "/o", "items": "/data", "total": "/meta/total",
                       "paging": {"style": "offset", "limit": 3, "overlap": true}, "item": {"kind": "artist", "id": "/id"}}}}
      """#)
    let list = try #require(configuration.lists["o"])
    func read(_ body: String, _ token: PageToken?) throws -> ListPage {
      try RESTLists.readPage(HTTPResponse(status: 200, body: Array(body.utf8)), list, token).get()
    }
    let first = try read(#"{"data":[{"id":"a"},{"id":"b"},{"id":"c"}],"meta":{"total":7}}"#, nil)
    #expect(first.items.map(\.key.id) == ["a", "b", "c"] && first.overlap == nil && first.total == 7)
    #expect(first.next == .offset(3))
    // Asked from offset 2: "c" is the overlap, not an item again; two new ones advance.
    let next = try read(#"{"data":[{"id":"c"},{"id":"d"},{"id":"e"}],"meta":{"total":"7"}}"#, .offset(3))
    #expect(next.items.map(\.key.id) == ["d", "e"] && next.overlap == .item(EntityKey(kind: "artist", id: "c")))
    #expect(next.total == nil, "a total that is no integer is not compared")
    #expect(next.next == .offset(5))
    let gone = try read(#"{"data":[],"meta":{"total":-1}}"#, .offset(5))
    #expect(gone.overlap == .absent && gone.next == nil && gone.total == nil)
  }

  @Test func theLinkHeaderIsRead() {
    #expect(
      RESTLists.nextLink(#"<https://x/a?p=2>; rel="next", <https://x/a?p=9>; rel="last""#) == "https://x/a?p=2")
    #expect(RESTLists.nextLink(#"<https://x/a?p=1>; rel="prev""#) == nil)
    #expect(RESTLists.nextLink(#"<https://x/a?tags=a,b&p=2>; rel="next last""#) == "https://x/a?tags=a,b&p=2")
    #expect(RESTLists.nextLink(#"</a?p=2>; rel=next"#, base: "https://x:8080/a?p=1") == "https://x:8080/a?p=2")
    #expect(RESTLists.nextLink(#"<b?p=2>; rel="next""#, base: "https://x/v1/a?p=1") == "https://x/v1/b?p=2")
  }
}
