import EventLoop
import HTTP
import NetworkModels
import Posix
import TestSupport
import Testing

/// Bluesky's follow API (issue 31 §6): the record an unfollow deletes is named by the
/// last segment of an at-uri a read answers, and a batched read says "followed" by
/// that at-uri being there, not by a boolean.
@Suite struct RESTCapturePartTests {
  static func configuration(capture: String = #"{"pointer": "/viewer/following", "segment": "last"}"#) -> String {
    #"""
    {
      "environments": {"test": "http://127.0.0.1:1"},
      "timeoutMs": 2000,
      "kinds": {
        "actor": {
          "follow": {"method": "POST", "path": "/xrpc/com.atproto.repo.createRecord",
                     "json": {"repo": "did:plc:me", "collection": "app.bsky.graph.follow",
                              "record": {"subject": "{id}"}},
                     "capture": {"rkey": {"pointer": "/uri",
                                          "pattern": "^at://[^/]+/app\\.bsky\\.graph\\.follow/([^/]+)$"}}},
          "unfollow": {"method": "POST", "path": "/xrpc/com.atproto.repo.deleteRecord",
                       "json": {"repo": "did:plc:me", "collection": "app.bsky.graph.follow", "rkey": "{rkey}"}},
          "state": {"method": "GET", "path": "/xrpc/app.bsky.actor.getProfiles", "query": {"actors": "{ids}"},
                    "batch": {"items": "/profiles", "id": "/did", "following": {"nonEmpty": "/viewer/following"},
                              "windowMs": 5},
                    "capture": {"rkey": CAPTURE}}
        }
      }
    }
    """#.replacingOccurrences("CAPTURE", capture)
  }

  @Test(arguments: [
    (#"{"pointer": "/uri", "pattern": "^at://.*$"}"#, "/kinds/actor/state/capture/rkey/pattern"),
    (#"{"pointer": "/uri", "pattern": "(a)/(b)"}"#, "/kinds/actor/state/capture/rkey/pattern"),
    (#"{"pointer": "/uri", "pattern": "(unclosed"}"#, "/kinds/actor/state/capture/rkey/pattern"),
    (#"{"pointer": "/uri", "segment": "first"}"#, "/kinds/actor/state/capture/rkey/segment"),
    (#"{"pointer": "/uri"}"#, "/kinds/actor/state/capture/rkey"),
    (#"{"pattern": "(x)"}"#, "/kinds/actor/state/capture/rkey"),
    (#"{"pointer": "/uri", "segment": "last", "group": 1}"#, "/kinds/actor/state/capture/rkey/group"),
  ])
  func mistakesAreRefusedWithTheirPath(capture: String, path: String) throws {
    do {
      _ = try RESTConfiguration.parse(Self.configuration(capture: capture))
      Issue.record("accepted")
    } catch {
      #expect(error.path == path)
    }
  }

  @Test func aFlagTestTakesTheWordsOfAWhen() throws {
    let text = Self.configuration().replacingOccurrences(
      #"{"nonEmpty": "/viewer/following"}"#, #"{"pointer": "/viewer/following", "equals": "x", "contains": "y"}"#)
    do {
      _ = try RESTConfiguration.parse(text)
      Issue.record("accepted")
    } catch {
      #expect(error.path == "/kinds/actor/state/batch/following")
    }
  }

  @Test func thePartKeptIsTheGroupOrTheLastSegment() throws {
    let configuration = try RESTConfiguration.parse(Self.configuration())
    let kind = try #require(configuration.kinds["actor"])
    let follow = try #require(kind.follow.capture.first)
    let uri = "at://did:plc:me/app.bsky.graph.follow/3kabc"
    #expect(try follow.part(of: uri).get() == "3kabc")
    #expect(throws: RESTConfiguration.CaptureMiss.self) {
      try follow.part(of: "at://did:plc:me/app.bsky.feed.like/3k").get()
    }
    let state = try #require(kind.state.endpoint.capture.first)
    #expect(try state.part(of: uri).get() == "3kabc")
    #expect(throws: RESTConfiguration.CaptureMiss.self) { try state.part(of: "at://did:plc:me/").get() }
  }

  @Test func presenceSaysFollowedAndTheUnfollowDeletesTheReadRecord() throws {
    let loop = try EventLoop()
    let server = try LoopbackHTTPServer(loop: loop)
    let configuration = try RESTConfiguration.parse(
      Self.configuration().replacingOccurrences("http://127.0.0.1:1", server.baseURL))
    let backend = RESTBackend(configuration: configuration, loop: loop, environmentVariables: { _ in nil })
    server.handler = { request in
      guard request.method == "GET" else { return .respond(status: 200, body: "{}") }
      return .respond(
        status: 200,
        body:
          #"{"profiles": [{"did": "did:plc:a", "viewer": {"following": "at://did:plc:me/app.bsky.graph.follow/rk1"}},"#
          + #"{"did": "did:plc:b", "viewer": {}}, {"did": "did:plc:c", "viewer": {"following": "at://did:plc:me/"}}]}"#)
    }
    func run(until done: () -> Bool) throws {
      let deadline = Process.monotonicNanoseconds() + 10_000_000_000
      while !done() && Process.monotonicNanoseconds() < deadline { try loop.runOnce(wait: true) }
    }
    let keys = ["did:plc:a", "did:plc:b", "did:plc:c"].map { EntityKey(kind: "actor", id: $0) }
    var answers: [String: Result<FollowAnswer, FollowFailure>] = [:]
    for key in keys { backend.fetchFollowing(key) { answers[key.id] = $0 } }
    try run { answers.count == keys.count }
    #expect(server.requests.count == 1)
    #expect(try answers["did:plc:a"]?.get() == .following)
    #expect(try answers["did:plc:b"]?.get() == .notFollowing)
    #expect(try answers["did:plc:c"]?.get() == .following)
    #expect(backend.session.capturedValues.values(of: keys[0], in: "test") == ["rkey": "rk1"])
    #expect(backend.session.capturedValues.values(of: keys[2], in: "test").isEmpty)

    var unfollowed: Result<FollowAnswer, FollowFailure>?
    backend.setFollowing(keys[0], false) { unfollowed = $0 }
    try run { unfollowed != nil }
    #expect(try unfollowed?.get() == .notFollowing)
    let delete = try #require(server.requests.last)
    #expect(delete.path == "/xrpc/com.atproto.repo.deleteRecord")
    #expect(delete.body.contains(#""rkey":"rk1""#) || delete.body.contains(#""rkey": "rk1""#))

    // A malformed at-uri is no empty rkey sent: the unfollow fails and says why.
    var refused: Result<FollowAnswer, FollowFailure>?
    backend.setFollowing(keys[2], false) { refused = $0 }
    try run { refused != nil }
    guard case .failure(let failure)? = refused else {
      Issue.record("unfollowed: \(String(describing: refused))")
      return
    }
    #expect(failure.message.contains("leaves nothing to keep for {rkey}"))
    #expect(server.requests.filter { $0.path == "/xrpc/com.atproto.repo.deleteRecord" }.count == 1)
  }
}
