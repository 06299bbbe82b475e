import EventLoop
import JSON
import JSONRPC
import Testing

/// A `MemoryPeer` must be served like a socket peer: FuzzDispatch fuzzes the
/// connection through it and takes what it finds as true of sockets.
@Suite struct MemoryPeerTests {
  private func run(_ loop: EventLoop, until done: () -> Bool) throws {
    var left = 200
    while !done() && left > 0 {
      left -= 1
      try loop.runOnce(wait: false)
    }
  }

  private func send(_ text: String, to peer: MemoryPeer) {
    Array(text.utf8).withUnsafeBytes { peer.write($0) }
  }

  @Test func aRequestWrittenInPiecesIsAnsweredAndTheEndOfInputClosesTheConnection() throws {
    let fixture = try Fixture()
    let peer = MemoryPeer()
    let connection = fixture.server.attach(peer)
    send(#"{"jsonrpc":"2.0","id":1,"meth"#, to: peer)
    try fixture.loop.runOnce(wait: false)
    #expect(peer.received.isEmpty)
    send(#"od":"echo","params":[7]}"# + "\n", to: peer)
    try run(fixture.loop) { !peer.received.isEmpty }
    #expect(String(decoding: peer.received, as: UTF8.self) == #"{"jsonrpc":"2.0","id":1,"result":[7]}"# + "\n")

    peer.close()
    try run(fixture.loop) { connection.isClosed }
    #expect(connection.isClosed)
    #expect(peer.closedByServer)
    #expect(fixture.server.connections.isEmpty)
  }

  /// Nothing the dispatcher keeps between requests (its reused responder) may keep a
  /// connection, which keeps the dispatcher: a server dropped after serving would
  /// never be freed (FuzzDispatch makes and drops one per input).
  @Test func aServerDroppedAfterAnsweringIsFreedWithItsConnectionAndDispatcher() throws {
    weak var dispatcher: Dispatcher?
    weak var connection: Connection?
    try {
      let fixture = try Fixture()
      let peer = MemoryPeer()
      connection = fixture.server.attach(peer)
      dispatcher = fixture.server.dispatcher
      send(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":[7]}"# + "\n", to: peer)
      try run(fixture.loop) { !peer.received.isEmpty }
      #expect(!peer.received.isEmpty)
      peer.close()
      try run(fixture.loop) { connection?.isClosed ?? true }
    }()
    #expect(dispatcher == nil)
    #expect(connection == nil)
  }

  @Test func repliesToAPeerThatClosedAreDroppedAndTheConnectionCloses() throws {
    let fixture = try Fixture()
    let peer = MemoryPeer()
    let connection = fixture.server.attach(peer)
    send(#"{"jsonrpc":"2.0","id":1,"method":"hold"}"# + "\n", to: peer)
    try run(fixture.loop) { !fixture.held.isEmpty }
    peer.close()
    try run(fixture.loop) { connection.isClosed }
    #expect(connection.isClosed)
    fixture.held[0].succeed(JSON.integer(1))
    try fixture.loop.runOnce(wait: false)
    #expect(peer.received.isEmpty)
  }

  @Test func whatTheServerSaysMatchesASocketPeer() throws {
    let input =
      #"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":"\u00e9"}}"# + "\n"
      + #"[{"jsonrpc":"2.0","id":2,"method":"fail"},5]"#
      + "\n" + "not json\n"
    let socketFixture = try Fixture()
    let socketPeer = try socketFixture.peer()
    try socketPeer.write(input)
    let expected = try socketPeer.receive(3)

    let fixture = try Fixture()
    let peer = MemoryPeer()
    fixture.server.attach(peer)
    send(input, to: peer)
    try run(fixture.loop) { peer.received.filter { $0 == 0x0A }.count >= 3 }
    let replies = try peer.received.split(separator: 0x0A).map { try JSON.parse(Array($0)) }
    #expect(replies.map { $0.encoded() } == expected.map { $0.encoded() })
  }
}
