import EventLoop
import HTTP
import NetworkModels
import Posix
import TestSupport
import Testing

/// A batched state read with one flag per item (Mastodon's relationships) that also
/// captures a value: only the items that say following give theirs, since what they
/// name (a follow's own id) exists only then; the unfollow then needs no read first.
@Suite struct RESTBatchFlagCaptureTests {
  static let configuration = #"""
    {
      "environments": {"test": "http://127.0.0.1:1"},
      "timeoutMs": 2000,
      "kinds": {
        "account": {
          "follow": {"method": "POST", "path": "/accounts/{id}/follow", "following": "/following"},
          "unfollow": {"method": "DELETE", "path": "/follows/{followId}"},
          "state": {"method": "GET", "path": "/relationships", "query": {"id[]": "{ids}"},
                    "batch": {"items": "", "id": "/id", "following": "/following", "requested": "/requested",
                              "windowMs": 5},
                    "capture": {"followId": "/follow_id"}}
        }
      }
    }
    """#

  @Test func onlyItemsThatSayFollowingCaptureTheirValue() throws {
    let loop = try EventLoop()
    let server = try LoopbackHTTPServer(loop: loop)
    let configuration = try RESTConfiguration.parse(
      Self.configuration.replacingOccurrences("http://127.0.0.1:1", server.baseURL))
    let backend = RESTBackend(configuration: configuration, loop: loop, environmentVariables: { _ in nil })
    server.handler = { request in
      guard request.method == "GET" else { return .respond(status: 204) }
      return .respond(
        status: 200,
        body: #"[{"id":"1","following":true,"requested":false,"follow_id":"f1"},"#
          + #"{"id":"2","following":false,"requested":false,"follow_id":"f2"},"#
          + #"{"id":"3","following":false,"requested":true,"follow_id":"f3"}]"#)
    }
    func run(until done: () -> Bool) throws {
      let deadline = Process.monotonicNanoseconds() + 10_000_000_000
      while !done() && Process.monotonicNanoseconds() < deadline { try loop.runOnce(wait: true) }
    }
    let keys = ["1", "2", "3"].map { EntityKey(kind: "account", id: $0) }
    var answers: [String: Result<FollowAnswer, FollowFailure>] = [:]
    for key in keys { backend.fetchFollowing(key) { answers[key.id] = $0 } }
    try run { answers.count == keys.count }
    #expect(server.requests.count == 1)
    #expect(try answers["1"]?.get() == .following && answers["3"].map { try? $0.get() } == .requested)
    #expect(backend.session.capturedValues.values(of: keys[0], in: "test") == ["followId": "f1"])
    #expect(backend.session.capturedValues.values(of: keys[1], in: "test").isEmpty)
    #expect(backend.session.capturedValues.values(of: keys[2], in: "test").isEmpty)

    // The unfollow uses the captured id at once, without reading the state again.
    var unfollowed: Result<FollowAnswer, FollowFailure>?
    backend.setFollowing(keys[0], false) { unfollowed = $0 }
    try run { unfollowed != nil }
    #expect(try unfollowed?.get() == .notFollowing)
    #expect(server.requests.map { "\($0.method) \($0.path)" } == ["GET /relationships", "DELETE /follows/f1"])
  }
}
