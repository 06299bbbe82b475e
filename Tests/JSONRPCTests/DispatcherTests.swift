import EventLoop
import JSON
import JSONRPC
import TestSupport
import Testing

/// Whatever params the peer sent, as a tree.
struct AnyParams: MethodParams {
  static let fields: [ParamField] = []
  let tree: JSON?
  init(from params: borrowing ParamsReader) { tree = params.tree }
}

/// A test method named `Name`: it takes any params and answers with any JSON.
protocol TestMethod: RequestMethod where Params == AnyParams, Result == JSON {}
extension TestMethod {
  static var errorCodes: [ErrorCode] { [.invalidParams] }
}

enum Echo: TestMethod { static let name = "echo" }
enum Hold: TestMethod { static let name = "hold" }
enum Fail: TestMethod { static let name = "fail" }
enum Count: TestMethod { static let name = "count" }
enum Big: TestMethod { static let name = "big" }

/// A server with a few handlers, one of which answers only when told to.
final class Fixture {
  let loop: EventLoop
  let server: RPCServer
  var held: [Responder] = []
  var cancelled: [String] = []

  init(
    maxMessageBytes: Int = 1 << 20, maxUnreadBytes: Int = 8 << 20, maxBatchElements: Int = 10_000,
    maxPendingRequests: Int = 10_000
  ) throws {
    loop = try EventLoop(clock: ManualClock())
    server = RPCServer(
      loop: loop, maxMessageBytes: maxMessageBytes, maxUnreadBytes: maxUnreadBytes, maxBatchElements: maxBatchElements,
      maxPendingRequests: maxPendingRequests)
    server.dispatcher.register(Echo.self) { request in
      request.reply.succeed(request.params.tree ?? .null())
    }
    server.dispatcher.register(Hold.self) { [unowned self] request in
      let responder = request.reply.responder
      let method = responder.method
      responder.onCancel = { [unowned self] in self.cancelled.append(method) }
      self.held.append(responder)
    }
    server.dispatcher.register(Fail.self) { _ throws(ResponseError) in
      throw .invalidParams("bad", path: "/x")
    }
  }

  func peer(_ framing: Framing = .newlineDelimited) throws -> InProcessPeer {
    try InProcessPeer(server: server, framing: framing)
  }
}

@Suite struct DispatcherTests {
  @Test(arguments: [Framing.newlineDelimited, .contentLength])
  func idsAreEchoedInTheTypeTheyWereSentAs(framing: Framing) throws {
    let fixture = try Fixture()
    let peer = try fixture.peer(framing)
    for id in ["7", #""7""#, "null", "-3", #""""#] {
      try peer.send(#"{"jsonrpc":"2.0","id":\#(id),"method":"echo","params":[1]}"#, framing: framing)
      let reply = try #require(try peer.receive().first)
      #expect(reply["id"]!.text == id)
      #expect(reply["result"]!.text == "[1]")
    }
  }

  @Test(arguments: [Framing.newlineDelimited, .contentLength])
  func malformedInputGetsTheRightErrorAndTheConnectionGoesOn(framing: Framing) throws {
    let fixture = try Fixture()
    let peer = try fixture.peer(framing)
    let cases: [(String, Int64, String)] = [
      // Unparsable, but the envelope still shows the id: it is given back (IDRecovery).
      (#"{"jsonrpc":"2.0","id":1,"method":"echo""#, -32700, "1"),
      (#"{"jsonrpc":"2.0","id":"a1","params":{"s":"\ud800","id":2},"method":"echo"}"#, -32700, #""a1""#),
      (#"{"params":["}]\"",{"id":3}],"id":-9,"method":"echo","x":"\udc00"}"#, -32700, "-9"),
      (#"{"jsonrpc":"2.0","id":"\ud800","method":"echo"}"#, -32700, "null"),
      (#"{"jsonrpc":"2.0","id":1.5,"method":"echo","x":"\ud800"}"#, -32700, "null"),
      (#"[{"jsonrpc":"2.0","id":1,"method":"echo"}"#, -32700, "null"),
      (#"{"jsonrpc":"1.0","id":2,"method":"echo"}"#, -32600, "2"),
      (#"{"jsonrpc":"2.0","id":3}"#, -32600, "3"),
      (#"{"jsonrpc":"2.0","id":4,"method":5}"#, -32600, "4"),
      (#"{"jsonrpc":"2.0","id":{},"method":"echo"}"#, -32600, "null"),
      (#"{"jsonrpc":"2.0","id":5,"method":"echo","params":"s"}"#, -32600, "5"),
      (#"{"jsonrpc":"2.0","id":6,"method":"nope"}"#, -32601, "6"),
      (#"{"jsonrpc":"2.0","id":7,"method":"fail"}"#, -32602, "7"),
      ("42", -32600, "null"),
    ]
    for (message, code, id) in cases {
      try peer.send(message, framing: framing)
      let reply = try #require(try peer.receive().first, "no reply to \(message)")
      #expect(reply["error"]?["code"]?.integer == code, "\(message)")
      #expect(reply["id"]?.text == id, "\(message)")
    }
    try peer.send(#"{"jsonrpc":"2.0","id":8,"method":"echo","params":{"still":"here"}}"#, framing: framing)
    #expect(try peer.receive().first?["result"]?["still"]?.string == "here")
  }

  @Test func invalidParamsCarryThePathOfTheBadField() throws {
    let fixture = try Fixture()
    let peer = try fixture.peer()
    try peer.send(#"{"jsonrpc":"2.0","id":1,"method":"fail"}"#)
    let error = try #require(try peer.receive().first?["error"])
    #expect(error["data"]?["path"]?.string == "/x")
  }

  @Test(arguments: [Framing.newlineDelimited, .contentLength])
  func batchesFollowTheSpec(framing: Framing) throws {
    let fixture = try Fixture()
    let peer = try fixture.peer(framing)
    try peer.send("[]", framing: framing)
    let empty = try #require(try peer.receive().first)
    #expect(!empty.isArray)
    #expect(empty["error"]?["code"]?.integer == -32600)

    try peer.send(#"[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"x"}]"#, framing: framing)
    try peer.send(#"{"jsonrpc":"2.0","id":"after","method":"echo"}"#, framing: framing)
    let next = try #require(try peer.receive().first)
    #expect(next["id"]?.string == "after", "an all-notification batch must get no reply")

    try peer.send(
      #"[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","method":"echo"},1,{"jsonrpc":"2.0","id":2,"method":"nope"}]"#,
      framing: framing)
    let mixed = try #require(try peer.receive().first)
    #expect(mixed.isArray)
    #expect(mixed.count == 3)
    #expect(mixed[0]?["result"]?.text == "[1]")
    #expect(mixed[1]?["error"]?["code"]?.integer == -32600)
    #expect(mixed[2]?["error"]?["code"]?.integer == -32601)
  }

  @Test func aBatchWaitsForItsSlowestMember() throws {
    let fixture = try Fixture()
    let peer = try fixture.peer()
    try peer.send(#"[{"jsonrpc":"2.0","id":1,"method":"hold"},{"jsonrpc":"2.0","id":2,"method":"echo"}]"#)
    #expect(try peer.drain().isEmpty)
    fixture.held[0].succeed(.string("late"))
    let batch = try #require(try peer.receive().first)
    #expect(batch[0]?["result"]?.string == "late")
    #expect(batch[1]?["id"]?.integer == 2)
  }

  @Test func cancelAnswersMinus32800OnceAndTellsTheHandler() throws {
    let fixture = try Fixture()
    let peer = try fixture.peer()
    try peer.send(#"{"jsonrpc":"2.0","id":"slow","method":"hold"}"#)
    #expect(try peer.drain().isEmpty)
    try peer.send(#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"slow"}}"#)
    let reply = try #require(try peer.receive().first)
    #expect(reply["id"]?.string == "slow")
    #expect(reply["error"]?["code"]?.integer == -32800)
    #expect(fixture.cancelled == ["hold"])
    // The handler's late answer is dropped: the request was already answered.
    fixture.held[0].succeed(.string("too late"))
    #expect(try peer.drain().isEmpty)
  }

  @Test func cancelMatchesTheIdByTypeAndIgnoresUnknownIds() throws {
    let fixture = try Fixture()
    let peer = try fixture.peer()
    try peer.send(#"{"jsonrpc":"2.0","id":7,"method":"hold"}"#)
    try peer.send(#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"7"}}"#)
    try peer.send(#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}}"#)
    #expect(try peer.drain().isEmpty)
    fixture.held[0].succeed(.integer(1))
    #expect(try peer.receive().first?["result"]?.integer == 1)
  }

  @Test func anOversizedMessageIsRefusedNamingTheLimitAndSkipped() throws {
    let fixture = try Fixture(maxMessageBytes: 100)
    let peer = try fixture.peer()
    try peer.send(
      #"{"jsonrpc":"2.0","id":1,"method":"echo","params":[""# + String(repeating: "x", count: 200) + #""]}"#)
    try peer.send(#"{"jsonrpc":"2.0","id":2,"method":"echo"}"#)
    let replies = try peer.receive(2)
    #expect(replies.count == 2)
    #expect(replies[0]["error"]?["code"]?.integer == -32600)
    #expect(replies[0]["error"]?["data"]?["limit"]?.integer == 100)
    #expect(replies[0]["error"]?["message"]?.string?.contains("100") == true)
    #expect(replies[1]["id"]?.integer == 2)
  }

  @Test func repliesUseThePeersFraming() throws {
    let fixture = try Fixture()
    let lspPeer = try fixture.peer(.contentLength)
    try lspPeer.send(#"{"jsonrpc":"2.0","id":1,"method":"echo"}"#, framing: .contentLength)
    let lspBytes = String(decoding: try lspPeer.rawOutput(), as: UTF8.self)
    #expect(lspBytes == "Content-Length: 38\r\n\r\n" + #"{"jsonrpc":"2.0","id":1,"result":null}"#)

    let linePeer = try fixture.peer()
    try linePeer.send(#"{"jsonrpc":"2.0","id":1,"method":"echo"}"#)
    let lineBytes = String(decoding: try linePeer.rawOutput(), as: UTF8.self)
    #expect(lineBytes == #"{"jsonrpc":"2.0","id":1,"result":null}"# + "\n")
  }

  /// Output made after this iteration's flush (a hook that runs later) must not wait
  /// for the next event: the loop runs once more instead of sleeping.
  @Test func outputQueuedAfterTheFlushDoesNotWaitForTheNextEvent() throws {
    let fixture = try Fixture()
    let peer = try fixture.peer()
    try peer.send(#"{"jsonrpc":"2.0","id":1,"method":"hold"}"#)
    #expect(try peer.drain().isEmpty)
    var fired = false
    fixture.loop.addBeforeSleepHook {
      guard !fired, let held = fixture.held.first else { return }
      fired = true
      held.succeed(.string("late"))
    }
    try fixture.loop.runOnce(wait: false)
    #expect(fired)
    #expect(fixture.loop.hasQueuedTasks, "the loop would sleep with a reply queued")
    // Returns at once when a task is queued; without one it would sleep forever.
    if fixture.loop.hasQueuedTasks { try fixture.loop.runOnce(wait: true) }
    #expect(try peer.receive().first?["result"]?.string == "late")
  }

  @Test func aPeerThatStopsReadingDoesNotDelayAnother() throws {
    let fixture = try Fixture()
    let stalled = try fixture.peer()
    let big = #"{"jsonrpc":"2.0","id":1,"method":"echo","params":[""# + String(repeating: "y", count: 60_000) + #""]}"#
    for _ in 0..<50 { try stalled.send(big) }
    let other = try fixture.peer()
    try other.send(#"{"jsonrpc":"2.0","id":"quick","method":"echo"}"#)
    let reply = try #require(try other.receive(1, iterations: 20).first)
    #expect(reply["id"]?.string == "quick")
    #expect(stalled.connection.unsentByteCount > 0, "the stalled peer's replies wait in its own queue")
    #expect(try stalled.receive(50, iterations: 2000).count == 50, "and none of them is dropped")
  }

  @Test func statisticsCountWhatHappened() throws {
    let fixture = try Fixture()
    let peer = try fixture.peer()
    try peer.send(#"{"jsonrpc":"2.0","id":1,"method":"echo"}"#)
    try peer.send(#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#)
    try peer.send(#"{"jsonrpc":"2.0","method":"note"}"#)
    _ = try peer.receive(2)
    let stats = fixture.server.statistics
    #expect(stats.requestsTotal == 2)
    #expect(stats.requestsByMethod == ["echo": 1])
    #expect(stats.notificationsReceived == 1)
    #expect(stats.errorsByCode == [-32601: 1])
    #expect(stats.bytesIn > 0 && stats.bytesOut > 0)
    #expect(stats.connectionsOpen == 1)
    peer.closeWrite()
    _ = try peer.drain()
    #expect(stats.connectionsOpen == 0)
    #expect(stats.connectionsTotal == 1)
  }

  @Test func aBatchReplyStopsGrowingAtTheLimitAndTheRestIsNotRun() throws {
    let fixture = try Fixture(maxUnreadBytes: 10_000)
    var ran = 0
    fixture.server.dispatcher.register(Count.self) { request in
      ran += 1
      request.reply.succeed(.string(String(repeating: "z", count: 3000)))
    }
    let peer = try fixture.peer()
    let elements = (0..<10).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"count"}"# }
    try peer.send("[" + elements.joined(separator: ",") + #",{"jsonrpc":"2.0","method":"echo"}]"#)
    let batch = try #require(try peer.receive().first)
    #expect(batch.count == 10)
    // 3 replies of ~3 KB fit under 10 KB; the 4th passes it; the others are refused.
    #expect(ran == 4)
    for index in 0..<10 {
      let reply = try #require(batch[index])
      #expect(reply["id"]?.integer == Int64(index))
      if index < 4 {
        #expect(reply["result"]?.string?.count == 3000)
      } else {
        #expect(reply["error"]?["code"]?.integer == -32600)
        #expect(reply["error"]?["data"]?["limit"]?.integer == 10_000)
        #expect(reply["error"]?["message"]?.string?.contains("--max-unread-bytes") == true)
      }
    }
    #expect(fixture.server.statistics.requestsByMethod["count"] == 4)
    // The notification after the limit still ran: it adds nothing to the reply.
    #expect(fixture.server.statistics.requestsByMethod["echo"] == 1)
    #expect(fixture.server.statistics.requestsTotal == 11)
  }

  @Test func aBatchOfTooManyElementsIsRefusedWholeBeforeItRuns() throws {
    let fixture = try Fixture(maxBatchElements: 3)
    var ran = 0
    fixture.server.dispatcher.register(Count.self) { request in
      ran += 1
      request.reply.succeed(.null())
    }
    let peer = try fixture.peer()
    let one = #"{"jsonrpc":"2.0","id":1,"method":"count","params":{"a":[1,2,"],[,"]}}"#
    try peer.send("[" + Array(repeating: one, count: 4).joined(separator: ",") + "]")
    let reply = try #require(try peer.receive().first)
    #expect(!reply.isArray)
    #expect(reply["error"]?["code"]?.integer == -32600)
    #expect(reply["error"]?["data"]?["limit"]?.integer == 3)
    #expect(reply["error"]?["data"]?["elements"]?.integer == 4)
    #expect(ran == 0)
    try peer.send("[" + Array(repeating: one, count: 3).joined(separator: ",") + "]")
    #expect(try peer.receive().first?.count == 3)
    #expect(ran == 3)
  }

  @Test func topLevelArrayElementsAreCountedWithoutParsing() {
    let cases: [(String, Int)] = [
      ("[]", 0), (" [ ] ", 0), ("[1]", 1), ("[1,2,3]", 3), (#"["a,b",{"c":[1,2]},[3,4]]"#, 3),
      (#"["\\",",",",\"]"]"#, 3), ("{}", 0), (#""x""#, 0), ("[[],[],{}]", 3), ("\n[0,\n0]", 2),
    ]
    for (text, expected) in cases {
      let count = Array(text.utf8).withUnsafeBytes { Dispatcher.topLevelArrayCount($0) }
      #expect(count == expected, "\(text)")
    }
  }

  @Test func readingPausesBetweenMessagesNotOnlyBetweenReads() throws {
    let fixture = try Fixture(maxUnreadBytes: 100_000)
    var ran = 0
    fixture.server.dispatcher.register(Big.self) { request in
      ran += 1
      request.reply.succeed(.string(String(repeating: "b", count: 30_000)))
    }
    let peer = try fixture.peer()
    // 200 requests in one write: one read delivers them all.
    let requests = (0..<200).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"big"}"# + "\n" }.joined()
    try peer.write(requests)
    for _ in 0..<5 { try fixture.loop.runOnce(wait: false) }
    // The socket buffer takes some; the rest stops at the limit, give or take one reply.
    #expect(ran < 200)
    #expect(peer.connection.unsentByteCount <= 100_000 + 30_100)
    let replies = try peer.receive(200, iterations: 5000)
    #expect(replies.map { $0["id"]?.integer } == (0..<200).map { Int64($0) })
    #expect(ran == 200)
  }

  @Test func readingPausesWhileTooManyRequestsWaitForAnAnswer() throws {
    let fixture = try Fixture(maxPendingRequests: 3)
    let peer = try fixture.peer()
    try peer.write((1...6).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"hold"}"# + "\n" }.joined())
    for _ in 0..<5 { try fixture.loop.runOnce(wait: false) }
    #expect(fixture.held.count == 3)
    fixture.held[0].succeed(.integer(1))
    for _ in 0..<5 { try fixture.loop.runOnce(wait: false) }
    #expect(fixture.held.count == 4, "one answered: one more is read")
    try peer.send(#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}"#)
    for _ in 0..<5 { try fixture.loop.runOnce(wait: false) }
    #expect(fixture.held.count == 4, "the cancel waits behind the requests sent before it")
    fixture.held[2].succeed(.integer(3))
    for _ in 0..<5 { try fixture.loop.runOnce(wait: false) }
    #expect(fixture.held.count == 5)
    for responder in fixture.held[3...] { responder.succeed(.null()) }
    for _ in 0..<5 { try fixture.loop.runOnce(wait: false) }
    #expect(fixture.held.count == 6)
    fixture.held[5].succeed(.null())
    let replies = try peer.receive(6, iterations: 50)
    #expect(Set(replies.compactMap { $0["id"]?.integer }) == Set(1...6))
    #expect(replies.first { $0["id"]?.integer == 2 }?["error"]?["code"]?.integer == -32800)
  }
}
