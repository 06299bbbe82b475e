import JSON
import JSONRPC
import Posix
import Service
import TestSupport
import Testing

/// `shutdown` and `exit` per session (issue 27 §6): a socket client's end only its own
/// connection; the stdio owner's, and `shutdown {daemon: true}` from the daemon's own
/// user, end the process.
@Suite struct SessionTests {
  let fixture: ServiceFixture
  var service: NetmodelService { fixture.service }

  init() throws { fixture = try ServiceFixture() }

  func call(_ peer: InProcessPeer, _ method: String, _ params: String? = nil, id: Int = 1) throws -> JSON {
    let paramsPart = params.map { #","params":\#($0)"# } ?? ""
    try peer.send(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)"\#(paramsPart)}"#)
    return try #require(try peer.receive().first)
  }

  func exit(_ peer: InProcessPeer) throws {
    try peer.send(#"{"jsonrpc":"2.0","method":"exit"}"#)
    _ = try peer.drain()
  }

  @Test func aSocketClientsShutdownAndExitEndOnlyItsSession() throws {
    let other = try InProcessPeer(server: service.server)
    #expect(try call(fixture.peer, "shutdown")["result"]?.isNull == true)
    let refused = try call(fixture.peer, "stats", id: 2)
    #expect(refused["error"]?["code"]?.integer == -32005)
    #expect(refused["error"]?["message"]?.string?.contains("session") == true)
    #expect(try call(other, "stats")["result"]?["requests"] != nil, "another client is still served")
    try exit(fixture.peer)
    #expect(fixture.peer.connection.isClosed, "exit closes that connection")
    #expect(service.exitCode == nil && !service.loop.isStopping, "the daemon goes on")
    #expect(!other.connection.isClosed)
    #expect(try call(other, "follow", #"{"kind":"artist","id":"a"}"#, id: 2)["result"]?["following"]?.bool == true)
  }

  @Test func aSocketClientsExitWithoutShutdownClosesOnlyItsConnection() throws {
    let other = try InProcessPeer(server: service.server)
    try exit(fixture.peer)
    #expect(fixture.peer.connection.isClosed && service.exitCode == nil)
    #expect(try call(other, "stats")["result"] != nil)
  }

  @Test func theStdioOwnersShutdownRefusesEveryClientUntilItsExit() throws {
    let owner = try InProcessPeer(server: service.server, transport: .stdio)
    #expect(try call(owner, "shutdown")["result"]?.isNull == true)
    #expect(try call(fixture.peer, "stats")["error"]?["code"]?.integer == -32005)
    #expect(service.exitCode == nil)
    try exit(owner)
    #expect(service.exitCode == 0 && service.loop.isStopping)
  }

  @Test func theDaemonsOwnUserStopsItForEveryone() throws {
    let stopper = try InProcessPeer(server: service.server, peerUser: service.owner)
    #expect(try call(stopper, "shutdown", #"{"daemon":true}"#)["result"]?.isNull == true)
    #expect(try call(fixture.peer, "stats")["error"]?["code"]?.integer == -32005, "every client is refused")
    #expect(service.exitCode == nil)
    try exit(stopper)
    #expect(service.exitCode == 0 && service.loop.isStopping)
    service.server.shutDown(answeringPending: .shuttingDown)
    #expect(fixture.peer.connection.isClosed, "the other clients' connections close")
    #expect(!stopper.connection.isClosed, "the stopper's stays open until the process ends")
  }

  @Test func aStopperThatGoesWithoutExitStillEndsTheProcess() throws {
    let stopper = try InProcessPeer(server: service.server, peerUser: service.owner)
    #expect(try call(stopper, "shutdown", #"{"daemon":true}"#)["result"]?.isNull == true)
    stopper.closeWrite()
    _ = try fixture.peer.drain()
    #expect(service.exitCode == 0)
  }

  @Test func anotherUserCannotStopTheDaemon() throws {
    var stranger = UserID(rawValue: service.owner.rawValue &+ 1)
    if stranger == service.owner { stranger = UserID(rawValue: 0) }
    for peerUser in [stranger, nil] {
      let peer = try InProcessPeer(server: service.server, peerUser: peerUser)
      let refused = try call(peer, "shutdown", #"{"daemon":true}"#)
      #expect(refused["error"]?["code"]?.integer == -32602)
      #expect(refused["error"]?["data"]?["path"]?.string == "/daemon")
      #expect(refused["error"]?["message"]?.string?.contains("uid \(service.owner)") == true)
      // Nothing changed: the refused peer and everyone else are served, and its exit
      // closes only its connection.
      #expect(try call(peer, "stats", id: 2)["result"] != nil)
      #expect(try call(fixture.peer, "stats")["result"] != nil)
      try exit(peer)
      #expect(service.exitCode == nil && peer.connection.isClosed)
    }
  }

  @Test func theOwnerCheckComparesTheInjectedUser() throws {
    // The seam: the server believes what the kernel said of the peer, and compares it
    // with the user it runs as; here the kernel's answer is ours, the owner another.
    service.owner = UserID(rawValue: UnixSocket.currentUID().rawValue &+ 1)
    let peer = try InProcessPeer(server: service.server, peerUser: UnixSocket.currentUID())
    #expect(try call(peer, "shutdown", #"{"daemon":true}"#)["error"]?["code"]?.integer == -32602)
    service.owner = UnixSocket.currentUID()
    #expect(try call(peer, "shutdown", #"{"daemon":true}"#, id: 2)["result"]?.isNull == true)
  }

  @Test func shutdownRefusesAnyOtherParam() throws {
    let typo = try call(fixture.peer, "shutdown", #"{"deamon":true}"#)
    #expect(typo["error"]?["code"]?.integer == -32602 && typo["error"]?["data"]?["path"]?.string == "/deamon")
    #expect(try call(fixture.peer, "shutdown", "[]", id: 2)["result"]?.isNull == true)
  }
}
