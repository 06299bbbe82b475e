import EventLoop
import HTTP
import JSON
import NetworkModels
import Posix
import TestSupport
import Testing

/// A YouTube-like kind (the unfollow takes the subscription id the follow answered;
/// the state read is the followed subset, its ids comma-joined) and a Spotify-like one
/// (a boolean per id asked, by position).
let captureConfiguration = #"""
  {
    "environments": {"test": "http://127.0.0.1:1", "other": "http://127.0.0.1:1"},
    "timeoutMs": 2000,
    "kinds": {
      "channel": {
        "follow": {"method": "POST", "path": "/subscriptions", "query": {"part": "snippet"},
                   "json": {"snippet": {"resourceId": {"channelId": "{id}"}}}, "capture": {"subscriptionId": "/id"}},
        "unfollow": {"method": "DELETE", "path": "/subscriptions", "query": {"id": "{subscriptionId}"}},
        "state": {"method": "GET", "path": "/subscriptions", "query": {"forChannelId": "{ids}"},
                  "batch": {"join": ",", "items": "/items", "id": "/snippet/resourceId/channelId", "windowMs": 5},
                  "capture": {"subscriptionId": "/id"}}
      },
      "artist": {
        "follow": {"method": "PUT", "path": "/me/following", "query": {"type": "artist", "ids": "{id}"}},
        "unfollow": {"method": "DELETE", "path": "/me/following", "query": {"type": "artist", "ids": "{id}"}},
        "state": {"method": "GET", "path": "/me/following/contains", "query": {"type": "artist", "ids": "{ids}"},
                  "batch": {"join": ",", "by": "position", "maxIds": 3, "windowMs": 5}}
      },
      "tag": {
        "follow": {"method": "PUT", "path": "/t/{id}"},
        "unfollow": {"method": "DELETE", "path": "/t/{id}"},
        "state": {"method": "POST", "path": "/t/check", "json": {"names": "{ids}"},
                  "batch": {"join": "|", "by": "position"}}
      }
    }
  }
  """#

final class CaptureFixture: LoopDriving {
  let loop: EventLoop
  let server: LoopbackHTTPServer
  var backend: RESTBackend

  init(values: CapturedValues = CapturedValues()) throws {
    loop = try EventLoop()
    server = try LoopbackHTTPServer(loop: loop)
    backend = try Self.backend(loop, server, values)
  }

  static func backend(_ loop: EventLoop, _ server: LoopbackHTTPServer, _ values: CapturedValues) throws -> RESTBackend {
    let configuration = try RESTConfiguration.parse(
      captureConfiguration.replacingOccurrences("http://127.0.0.1:1", server.baseURL))
    let backend = RESTBackend(configuration: configuration, loop: loop, environmentVariables: { _ in nil })
    backend.session.capturedValues = values
    return backend
  }

  func set(_ key: EntityKey, _ following: Bool) throws -> Result<FollowAnswer, FollowFailure> {
    var result: Result<FollowAnswer, FollowFailure>?
    backend.setFollowing(key, following) { result = $0 }
    try run { result != nil }
    return try #require(result)
  }

  func read(_ keys: [EntityKey]) throws -> [String: Result<FollowAnswer, FollowFailure>] {
    var results: [String: Result<FollowAnswer, FollowFailure>] = [:]
    for key in keys { backend.fetchFollowing(key) { results[key.id] = $0 } }
    try run { results.count == keys.count }
    return results
  }
}

/// The YouTube-like server: subscriptions by id, as the demo server keeps them.
final class SubscriptionsDouble {
  var byChannel: [String: String] = [:]
  var next = 1

  func handle(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Action {
    switch request.method {
    case "POST":
      let channel = (try? JSON.parse(request.body))?["snippet"]?["resourceId"]?["channelId"]?.string ?? ""
      let id = "sub\(next)"
      next += 1
      byChannel[channel] = id
      return .respond(status: 200, body: #"{"kind":"youtube#subscription","id":"\#(id)"}"#)
    case "DELETE":
      let id = String(request.query.dropFirst("id=".count))
      guard let channel = byChannel.first(where: { $0.value == id })?.key else {
        return .respond(status: 404, body: #"{"error":{"code":404,"message":"subscriptionNotFound"}}"#)
      }
      byChannel[channel] = nil
      return .respond(status: 204)
    default:
      let asked = request.query.dropFirst("forChannelId=".count).split(separator: ",").map(String.init)
      let items = asked.compactMap { channel in
        byChannel[channel].map { #"{"id":"\#($0)","snippet":{"resourceId":{"channelId":"\#(channel)"}}}"# }
      }
      return .respond(status: 200, body: #"{"items":[\#(items.joined(separator: ","))]}"#)
    }
  }
}

@Suite struct RESTCaptureTests {
  let channel = EntityKey(kind: "channel", id: "UCa")

  @Test func theUnfollowSendsTheIDTheFollowAnswered() throws {
    let f = try CaptureFixture()
    let youtube = SubscriptionsDouble()
    f.server.handler = youtube.handle
    #expect(try f.set(channel, true).get() == true)
    #expect(f.backend.session.capturedValues.values(of: channel, in: "test") == ["subscriptionId": "sub1"])
    #expect(try f.set(channel, false).get() == false)
    #expect(
      f.server.requests.map { "\($0.method) \($0.path)?\($0.query)" } == [
        "POST /subscriptions?part=snippet", "DELETE /subscriptions?id=sub1",
      ])
    #expect(youtube.byChannel.isEmpty)
    #expect(f.backend.session.capturedValues.values(of: channel, in: "test").isEmpty)
  }

  /// Confirming it would leave a follow nothing can undo.
  @Test(arguments: [#"{"kind":"youtube#subscription"}"#, #"{"id":null}"#, "not json", #"{"id":{"x":1}}"#])
  func aFollowAnswerWithoutTheValueIsAFailure(body: String) throws {
    let f = try CaptureFixture()
    f.server.handler = { _ in .respond(status: 200, body: body) }
    let failure = try #require(try f.set(channel, true).failure)
    #expect(failure.kind == .unavailable && failure.message.contains("/id"))
  }

  @Test func anIntegerIsCapturedAsItsText() throws {
    let f = try CaptureFixture()
    f.server.handler = { _ in .respond(status: 200, body: #"{"id":42}"#) }
    _ = try f.set(channel, true).get()
    #expect(f.backend.session.capturedValues.values(of: channel, in: "test") == ["subscriptionId": "42"])
  }

  /// A follow made elsewhere (or a lost state folder): the state read captures the
  /// subscription id, then the unfollow goes out with it.
  @Test func anUnfollowWithoutTheValueReadsTheStateFirst() throws {
    let f = try CaptureFixture()
    let youtube = SubscriptionsDouble()
    youtube.byChannel = ["UCa": "sub7"]
    f.server.handler = youtube.handle
    #expect(try f.set(channel, false).get() == false)
    #expect(f.server.requests.map { "\($0.method) \($0.query)" } == ["GET forChannelId=UCa", "DELETE id=sub7"])
    #expect(youtube.byChannel.isEmpty)
  }

  @Test func anUnfollowOfWhatTheStateSaysIsNotFollowedIsDone() throws {
    let f = try CaptureFixture()
    f.server.handler = SubscriptionsDouble().handle
    #expect(try f.set(channel, false).get() == false)
    #expect(f.server.requests.map(\.method) == ["GET"])
  }

  @Test func aStateReadFollowingWithoutTheValueFailsTheUnfollow() throws {
    let f = try CaptureFixture()
    f.server.handler = { _ in
      .respond(status: 200, body: #"{"items":[{"snippet":{"resourceId":{"channelId":"UCa"}}}]}"#)
    }
    let failure = try #require(try f.set(channel, false).failure)
    #expect(failure.message.contains("{subscriptionId}"))
    #expect(f.server.requests.map(\.method) == ["GET"])
  }

  @Test func aStateReadSayingNotFollowingForgetsTheValue() throws {
    let f = try CaptureFixture()
    let youtube = SubscriptionsDouble()
    f.server.handler = youtube.handle
    _ = try f.set(channel, true).get()
    youtube.byChannel = [:]  // unsubscribed on another device
    #expect(try f.read([channel])[channel.id]?.get() == false)
    #expect(f.backend.session.capturedValues.values(of: channel, in: "test").isEmpty)
  }

  @Test func aBatchedStateReadCapturesEachItemsValue() throws {
    let f = try CaptureFixture()
    let youtube = SubscriptionsDouble()
    youtube.byChannel = ["UCa": "s-a", "UCc": "s-c"]
    f.server.handler = youtube.handle
    let keys = ["UCa", "UCb", "UCc"].map { EntityKey(kind: "channel", id: $0) }
    let results = try f.read(keys)
    #expect(results.mapValues { try? $0.get() } == ["UCa": true, "UCb": false, "UCc": true])
    #expect(f.server.requests.map(\.query) == ["forChannelId=UCa,UCb,UCc"])
    #expect(f.backend.session.capturedValues.values(of: keys[2], in: "test") == ["subscriptionId": "s-c"])
  }

  /// Kept in the state folder: a backend started again on it unfollows with the value.
  @Test func capturedValuesOutliveTheBackend() throws {
    let temp = try LocalBackendTestFolder()
    let f = try CaptureFixture(values: try CapturedValues(folder: temp.folder))
    let youtube = SubscriptionsDouble()
    f.server.handler = youtube.handle
    _ = try f.set(channel, true).get()
    f.backend = try CaptureFixture.backend(f.loop, f.server, try CapturedValues(folder: temp.folder))
    #expect(try f.set(channel, false).get() == false)
    #expect(f.server.requests.map(\.method) == ["POST", "DELETE"])
    #expect(try CapturedValues(folder: temp.folder).values(of: channel, in: "test").isEmpty)
  }

  /// Values are per environment: a subscription of one API means nothing to another.
  @Test func capturedValuesArePerEnvironment() throws {
    let f = try CaptureFixture()
    let youtube = SubscriptionsDouble()
    f.server.handler = youtube.handle
    _ = try f.set(channel, true).get()
    #expect(f.backend.session.selectEnvironment("other"))
    _ = try f.set(channel, false).get()
    #expect(f.server.requests.map(\.method) == ["POST", "GET", "DELETE"])
  }

  @Test func aValueThatCannotBeKeptFailsTheFollow() throws {
    let temp = try LocalBackendTestFolder()
    let f = try CaptureFixture(values: try CapturedValues(folder: temp.folder))
    f.server.handler = SubscriptionsDouble().handle
    FileSystem.removeTree(temp.path)
    let failure = try #require(try f.set(channel, true).failure)
    #expect(failure.kind == .unavailable && failure.message.contains("could not keep"))
    #expect(f.backend.session.capturedValues.values(of: channel, in: "test").isEmpty)
  }

  /// The claim a restart relies on: the value is renamed into place and the folder
  /// synced before the follow is confirmed; a failed fsync fails the follow.
  @Test func theValueIsDurableBeforeTheFollowIsConfirmed() throws {
    let temp = try LocalBackendTestFolder()
    let log = OperationLog()
    var folder = temp.folder
    folder.observer = log
    let f = try CaptureFixture(values: try CapturedValues(folder: folder))
    f.server.handler = SubscriptionsDouble().handle
    var seen: [StateFileOperation]?
    f.backend.setFollowing(channel, true) { _ in seen = log.operations }
    try f.run { seen != nil }
    let temporary = ".\(CapturedValues.fileName).tmp-\(Process.id)"
    #expect(seen?.contains(.sync(temporary)) == true)
    #expect(seen?.contains(.rename(temporary, to: CapturedValues.fileName)) == true)
    #expect(seen?.last == .syncFolder)

    log.failSyncs = true
    let other = EntityKey(kind: "channel", id: "UC_x5XG1OV2P6uZZ5FSM9Ttw")
    let failure = try #require(try f.set(other, true).failure)
    #expect(failure.kind == .unavailable && failure.message.contains("could not keep"))
    #expect(try CapturedValues(folder: temp.folder).values(of: other, in: "test").isEmpty)
  }

  @Test func anUnreadableFileIsMovedAsideAndValuesStartEmpty() throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(CapturedValues.fileName, "{not json")
    let values = try CapturedValues(folder: temp.folder)
    #expect(values.values(of: channel, in: "test").isEmpty)
    #expect(temp.folder.exists(CapturedValues.fileName + ".unreadable-1"))
  }

  @Test func aCapturedValueMakingADotSegmentIsNotSent() throws {
    let configuration = try RESTConfiguration.parse(
      captureConfiguration.replacingOccurrences(
        #""path": "/subscriptions", "query": {"id": "{subscriptionId}"}"#, #""path": "/subscriptions/{subscriptionId}""#
      ))
    let loop = try EventLoop()
    let server = try LoopbackHTTPServer(loop: loop)
    let backend = RESTBackend(configuration: configuration, loop: loop)
    try backend.session.capturedValues.keep(["subscriptionId": ".."], for: channel, in: "test")
    var result: Result<FollowAnswer, FollowFailure>?
    backend.setFollowing(channel, false) { result = $0 }
    while result == nil { try loop.runOnce(wait: true) }
    #expect(result?.failure?.message.contains("dot segments") == true)
    #expect(server.requests.isEmpty)
  }
}

@Suite struct RESTBatchByPositionTests {
  let ids = ["a", "b", "c"]
  var keys: [EntityKey] { ids.map { EntityKey(kind: "artist", id: $0) } }

  @Test func aBooleanPerIDInTheOrderAsked() throws {
    let f = try CaptureFixture()
    f.server.handler = { _ in .respond(status: 200, body: "[true,false,true]") }
    let results = try f.read(keys)
    #expect(results.mapValues { try? $0.get() } == ["a": true, "b": false, "c": true])
    #expect(f.server.requests.map(\.query) == ["type=artist&ids=a,b,c"])
  }

  @Test(arguments: ["[true,false]", "[true,false,true,true]", #"[true,"no",false]"#, "[true,null,false]", "{}"])
  func anAnswerThatDoesNotMatchTheIDsFailsThemAll(body: String) throws {
    let f = try CaptureFixture()
    f.server.handler = { _ in .respond(status: 200, body: body) }
    let results = try f.read(keys)
    #expect(results.values.allSatisfy { $0.failure?.kind == .unavailable })
  }

  @Test func eachIDIsEncodedButTheSeparatorIsNot() throws {
    let f = try CaptureFixture()
    f.server.handler = { _ in .respond(status: 200, body: "[false,false]") }
    _ = try f.read([EntityKey(kind: "artist", id: "a,b"), EntityKey(kind: "artist", id: "c d")])
    #expect(f.server.requests.map(\.query) == ["type=artist&ids=a%2Cb,c%20d"])
  }

  @Test func maxIDsBoundsEachJoinedCall() throws {
    let f = try CaptureFixture()
    f.server.handler = { request in
      let count = request.query.split(separator: "=").last?.split(separator: ",").count ?? 0
      return .respond(status: 200, body: "[" + Array(repeating: "true", count: count).joined(separator: ",") + "]")
    }
    let results = try f.read((0..<7).map { EntityKey(kind: "artist", id: "a\($0)") })
    #expect(results.values.allSatisfy { (try? $0.get()) == true })
    #expect(f.server.requests.map { $0.query.split(separator: ",").count } == [3, 3, 1])
  }

  /// In a JSON body the joined ids are one string, sent as they are.
  @Test func aJSONBodyGetsOneJoinedString() throws {
    let f = try CaptureFixture()
    f.server.handler = { _ in .respond(status: 200, body: "[true,false]") }
    let results = try f.read([EntityKey(kind: "tag", id: "x y"), EntityKey(kind: "tag", id: "z")])
    #expect(results.mapValues { try? $0.get() } == ["x y": true, "z": false])
    #expect(f.server.requests.map(\.body) == [#"{"names":"x y|z"}"#])
  }

  /// Refused before anything changes or is sent: the models admit no such id (the
  /// service's -32602), so what could not be read is not followed either; a read of
  /// one that never met them (a list's item) fails without a request.
  @Test func anIDHoldingTheSeparatorOfAJoinedJSONStringIsRefused() throws {
    let f = try CaptureFixture()
    let problem = f.backend.follows.validatePlaceholders(kind: "tag", id: "x|y")
    #expect(problem?.path == "/id" && problem?.reason.contains("\"|\"") == true)
    #expect(f.backend.follows.validatePlaceholders(kind: "artist", id: "x,y") == nil)  // percent-encoded in a query
    let results = try f.read([EntityKey(kind: "tag", id: "x|y")])
    #expect(results["x|y"]?.failure?.kind == .rejected(status: 0))
    #expect(f.server.requests.isEmpty)
  }
}

@Suite struct RESTCaptureConfigurationTests {
  func refusal(_ edit: (String) -> String) -> RESTConfigurationError? {
    do {
      _ = try RESTConfiguration.parse(edit(captureConfiguration))
      return nil
    } catch {
      return error
    }
  }

  @Test(arguments: [
    (#""capture": {"subscriptionId": "/id"}},"#, #""capture": {"id": "/id"}},"#, "/kinds/channel/follow/capture/id"),
    (
      #""capture": {"subscriptionId": "/id"}},"#, #""capture": {"kind": "/id"}},"#, "/kinds/channel/follow/capture/kind"
    ),
    (
      #""capture": {"subscriptionId": "/id"}},"#, #""capture": {"sub-id": "/id"}},"#,
      "/kinds/channel/follow/capture/sub-id"
    ),
    (#""capture": {"subscriptionId": "/id"}},"#, #""capture": {"s": "id"}},"#, "/kinds/channel/follow/capture/s"),
    (#""capture": {"subscriptionId": "/id"}},"#, #""capture": {}},"#, "/kinds/channel/follow/capture"),
    (#""{subscriptionId}""#, #""{subscription}""#, "/kinds/channel/unfollow/query/id"),
    (#""join": ",", "by""#, #""join": "&", "by""#, "/kinds/artist/state/batch/join"),
    (#""join": ",", "by""#, #""join": "", "by""#, "/kinds/artist/state/batch/join"),
    (#""by": "position", "maxIds""#, #""by": "index", "maxIds""#, "/kinds/artist/state/batch/by"),
    (#""by": "position", "maxIds""#, #""by": "position", "id": "/id", "maxIds""#, "/kinds/artist/state/batch/id"),
    (
      #""by": "position", "maxIds": 3, "windowMs": 5}"#, #""by": "position", "maxIds": 3}, "capture": {"x": "/id"}"#,
      "/kinds/artist/state/capture"
    ),
    (#""by": "position"}}"#, #""by": "subset"}}"#, "/kinds/tag/state/batch"),
  ])
  func mistakesAreRefusedWithTheirPath(from: String, to: String, path: String) throws {
    let error = try #require(refusal { $0.replacingOccurrences(from, to) })
    #expect(error.path == path, "\(error)")
  }

  @Test func theCapturedNamesOfTheKindAreTheUnfollowsPlaceholders() throws {
    let configuration = try RESTConfiguration.parse(captureConfiguration)
    #expect(configuration.kinds["channel"]?.unfollowNeeds == ["subscriptionId"])
    #expect(configuration.kinds["artist"]?.unfollowNeeds == [])
    // A follow may not use a captured value: it is what makes one.
    let error = try #require(
      refusal { $0.replacingOccurrences(#""channelId": "{id}""#, #""channelId": "{subscriptionId}""#) })
    #expect(error.path == "/kinds/channel/follow/json/snippet/resourceId/channelId")
  }
}

private final class OperationLog: StateFileObserver, @unchecked Sendable {
  var operations: [StateFileOperation] = []
  var failSyncs = false

  func willPerform(_ operation: StateFileOperation) throws(Errno) {
    if failSyncs, case .sync = operation { throw Errno(Errno.inputOutput, call: "fsync (injected)") }
    operations.append(operation)
  }
}
