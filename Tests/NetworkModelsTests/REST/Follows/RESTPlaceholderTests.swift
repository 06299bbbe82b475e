import EventLoop
import NetworkModels
import Testing

/// Ids and list params are data, never path syntax (issue 16): a value that would fill
/// a "." or ".." segment is refused before anything is sent; every other value reaches
/// the server as the one segment it is.
@Suite struct RESTPlaceholderTests {
  static let configuration = #"""
    {
      "environments": {"test": "http://127.0.0.1:1"},
      "kinds": {
        "thing": {
          "follow": {"method": "PUT", "path": "/thing/{id}/follow"},
          "unfollow": {"method": "DELETE", "path": "/thing/{id}/follow"},
          "state": {"method": "GET", "path": "/thing/{id}"}
        },
        "dotted": {
          "follow": {"method": "POST", "path": "/d/.{id}"}, "unfollow": {"method": "DELETE", "path": "/d/{id}.json"},
          "state": {"method": "GET", "path": "/d?id={id}"}
        },
        "queried": {
          "follow": {"method": "POST", "path": "/q", "form": {"id": "{id}"}},
          "unfollow": {"method": "DELETE", "path": "/q", "query": {"id": "{id}"}},
          "state": {"method": "GET", "path": "/q", "query": {"ids[]": "{ids}"}, "batch": {"id": "/id"}}
        }
      },
      "lists": {
        "pair": {"method": "GET", "path": "/l/{a}{b}/x", "params": ["a", "b"], "item": {"kind": "thing", "id": "/id"}}
      }
    }
    """#

  let backend: RESTBackend

  init() throws {
    backend = RESTBackend(configuration: try RESTConfiguration.parse(Self.configuration), loop: try EventLoop())
  }

  @Test(arguments: [".", ".."])
  func aDotSegmentIDIsRefused(id: String) throws {
    let problem = try #require(backend.follows.validatePlaceholders(kind: "thing", id: id))
    #expect(problem.path == "/id")
    #expect(problem.reason.contains("dot segment") && problem.reason.contains("RFC 3986"))
  }

  @Test(arguments: ["...", "../..", "a/../..", "%2e%2e", "..%2F..", "?x=1", "#frag", "a b", "é"])
  func anyOtherIDIsOneSegment(id: String) {
    #expect(backend.follows.validatePlaceholders(kind: "thing", id: id) == nil)
  }

  /// The segment a value fills is what counts: "/d/.{id}" with "." makes "..", while
  /// "{id}.json" and a query never make a dot segment.
  @Test func theSegmentFilledIsChecked() {
    #expect(backend.follows.validatePlaceholders(kind: "dotted", id: ".")?.path == "/id")
    #expect(backend.follows.validatePlaceholders(kind: "dotted", id: "..") == nil)
    #expect(backend.follows.validatePlaceholders(kind: "queried", id: "..") == nil)
    #expect(backend.follows.validatePlaceholders(list: "pair", params: ["a": ".", "b": "."])?.path == "/params/a")
    #expect(backend.follows.validatePlaceholders(list: "pair", params: ["a": "x", "b": ".."]) == nil)
    #expect(
      backend.follows.validatePlaceholders(list: "pair", params: ["a": "", "b": "x"])?.reason.contains("empty") == true)
  }

  /// An intent replayed from the outbox never met `Models.admit`: one whose id this
  /// configuration could not send is kept, not sent (nothing pending), as one of a
  /// kind it lacks is; a sendable one beside it goes out.
  @Test func aReplayedIntentWithADotSegmentIsKeptNotSent() throws {
    let log = MemoryIntentLog()
    let dots = EntityKey(kind: "profile", id: "..")
    let sendable = EntityKey(kind: "profile", id: "gagosian")
    log.record(dots, wanted: false)
    log.record(sendable, wanted: true)
    let f = try RESTFixture(intentLog: log)
    f.store.replayIntents()
    #expect(!f.store.state(dots).pending && f.store.state(sendable).pending)
    #expect(log.unsettledIntents().map(\.0).contains(dots))
  }

  @Test(arguments: ["/a/./b", "/a/..", "/%2e%2E/b", "/a/.%2e?x=1", "/x/../{id}"])
  func aTemplateWithADotSegmentIsRefused(path: String) throws {
    let text = Self.configuration.replacingOccurrences(#""/thing/{id}/follow"}"#, #""\#(path)"}"#)
    #expect(throws: RESTConfigurationError.self) { try RESTConfiguration.parse(text) }
    do {
      _ = try RESTConfiguration.parse(text)
    } catch {
      #expect(error.path == "/kinds/thing/follow/path", "\(error)")
    }
  }
}
