import EventLoop
import JSON
import JSONRPC
import TestSupport
import Testing

enum Seen: TestMethod { static let name = "seen" }

/// A read of many requests is written in parts while it is answered
/// (`Connection.earlyFlushReplies`), not only at the loop turn's end: a pipelining peer
/// works on the first replies while the server answers the rest.
@Suite struct EarlyFlushTests {
  /// A server whose `seen` answers how many replies the peer had received when it ran.
  private func serving(_ peer: MemoryPeer) throws -> Fixture {
    let fixture = try Fixture()
    fixture.server.dispatcher.register(Seen.self) { request in
      request.reply.succeed(.integer(Int64(peer.received.filter { $0 == UInt8(ascii: "}") }.count)))
    }
    fixture.server.attach(peer)
    return fixture
  }

  private func requests(_ count: Int, _ framing: Framing) -> [UInt8] {
    var bytes: [UInt8] = []
    for id in 1...count {
      let text = #"{"jsonrpc":"2.0","id":\#(id),"method":"seen"}"#
      switch framing {
      case .newlineDelimited: bytes += Array((text + "\n").utf8)
      case .contentLength: bytes += Array("Content-Length: \(text.utf8.count)\r\n\r\n\(text)".utf8)
      }
    }
    return bytes
  }

  /// What each reply says, by id.
  private func answers(_ peer: MemoryPeer) throws -> [Int64: Int64] {
    var text = String(decoding: peer.received, as: UTF8.self)
    var found: [Int64: Int64] = [:]
    while let start = text.firstIndex(of: "{") {
      let end = text[start...].firstIndex(of: "}")!
      let reply = try JSON.parse(Array(text[start...end].utf8))
      found[reply["id"]!.integer!] = reply["result"]!.integer!
      text = String(text[text.index(after: end)...])
    }
    return found
  }

  @Test(arguments: [Framing.newlineDelimited, .contentLength])
  func everyThirtySecondReplyOfOneReadIsWrittenBeforeTheNextRequestRuns(framing: Framing) throws {
    let peer = MemoryPeer()
    let fixture = try serving(peer)
    requests(100, framing).withUnsafeBytes { peer.write($0) }
    try fixture.loop.runOnce(wait: false)

    let seen = try answers(peer)
    #expect(seen.count == 100)
    for id in Int64(1)...100 {
      #expect(seen[id] == (id - 1) / 32 * 32, "request \(id)")
    }
    // Three writes while the read was answered, one at the turn's end.
    #expect(peer.writeCount == 4)
  }

  @Test func whileTheServerSaysNoTheTurnIsWrittenOnce() throws {
    let peer = MemoryPeer()
    let fixture = try serving(peer)
    fixture.server.mayFlushEarly = { false }
    requests(100, .newlineDelimited).withUnsafeBytes { peer.write($0) }
    try fixture.loop.runOnce(wait: false)

    let seen = try answers(peer)
    #expect(seen.count == 100)
    #expect(Set(seen.values) == [0])
    #expect(peer.writeCount == 1)
  }

  /// What the hook does (the group commit, the notifications) comes before each write,
  /// as at the turn's end.
  @Test func thePreFlushHookRunsBeforeEveryEarlyWrite() throws {
    let peer = MemoryPeer()
    let fixture = try serving(peer)
    var writesWhenHooked: [Int] = []
    fixture.server.preFlushHook = { writesWhenHooked.append(peer.writeCount) }
    requests(70, .newlineDelimited).withUnsafeBytes { peer.write($0) }
    try fixture.loop.runOnce(wait: false)

    #expect(writesWhenHooked == [0, 1, 2])
    #expect(peer.writeCount == 3)
  }

  /// A socket peer that stops reading: the early writes meet a full socket, reading
  /// pauses at the limit, and once the peer reads, every reply comes, once, in order.
  @Test(arguments: [Framing.newlineDelimited, .contentLength])
  func aPeerThatStopsReadingGetsEveryReplyOnceItReads(framing: Framing) throws {
    let fixture = try Fixture(maxUnreadBytes: 32 << 10)
    let pad = String(repeating: "p", count: 400)
    fixture.server.dispatcher.register(Seen.self) { request in request.reply.succeed(.string(pad)) }
    let peer = try fixture.peer(framing)
    // 600 small requests fit the socket's buffer; their 250 KB of replies do not.
    try peer.write(requests(600, framing))
    for _ in 0..<20 { try fixture.loop.runOnce(wait: false) }
    let connection = try #require(fixture.server.connections.values.first)
    #expect(connection.unsentByteCount > 0)

    let replies = try peer.receive(600, iterations: 2000)
    #expect(replies.map { $0["id"]?.integer } == (1...600).map { Int64($0) })
    #expect(replies.allSatisfy { $0["result"]?.string == pad })
    #expect(try peer.drain().isEmpty)
  }

  /// A batch's reply is one reply, written whole.
  @Test func aBatchOfAHundredIsOneReplyAndOneWrite() throws {
    let peer = MemoryPeer()
    let fixture = try serving(peer)
    let elements = (1...100).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"seen"}"# }
    Array(("[" + elements.joined(separator: ",") + "]\n").utf8).withUnsafeBytes { peer.write($0) }
    try fixture.loop.runOnce(wait: false)

    #expect(try answers(peer).count == 100)
    #expect(peer.writeCount == 1)
  }
}
