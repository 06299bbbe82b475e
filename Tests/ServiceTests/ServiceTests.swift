import EventLoop
import JSON
import JSONRPC
import NetworkModels
import Posix
import Service
import TestSupport
import Testing

let repositoryRoot: String = {
  var path = #filePath
  for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
  return path
}()

func readFile(_ path: String) throws -> [UInt8] { try FileSystem.readFile(path) }

final class ServiceFixture {
  let service: NetmodelService
  let peer: InProcessPeer
  let clock = ManualClock()

  /// With `backendLatencyMs`, the in-memory backend answers that long after each call
  /// (on `clock`) rather than in the loop turn that made it.
  /// `transport`: how `peer` is attached (a socket client by default; stdio for the
  /// process that started the server).
  init(backendLatencyMs: UInt64? = nil, transport: Connection.Transport = .socket) throws {
    let loop = try EventLoop(clock: clock)
    let store = backendLatencyMs.map { latency in
      let backend = SimulatedBackend(
        wrapping: MemoryBackend(loop: loop), loop: loop, latency: .milliseconds(latency), seed: 1)
      return FollowStore(loop: loop, backend: backend)
    }
    service = NetmodelService(server: RPCServer(loop: loop), store: store)
    peer = try InProcessPeer(server: service.server, transport: transport)
  }

  func call(_ method: String, _ params: String? = nil, id: Int = 1) throws -> JSON {
    let paramsPart = params.map { #","params":\#($0)"# } ?? ""
    try peer.send(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)"\#(paramsPart)}"#)
    return try #require(try peer.receive().first)
  }
}

@Suite struct ServiceTests {
  @Test func rpcDiscoverAnswersExactlyTheSchemaFile() throws {
    let file = try JSON.parse(try readFile(repositoryRoot + "/schema/openrpc.json"))
    let fixture = try ServiceFixture()
    let reply = try fixture.call("rpc.discover")
    let document = try #require(reply["result"])
    let same = document == file
    #expect(
      same,
      "rpc.discover differs from schema/openrpc.json: is Sources/Service/Resources/openrpc.json still a link to it?")
  }

  @Test func everyMethodTheServerAnswersIsInTheSchemaAndBack() throws {
    let file = try JSON.parse(try readFile(repositoryRoot + "/schema/openrpc.json"))
    let documented = Set(file["methods"]!.elements.map { $0["name"]!.string! })
    let fixture = try ServiceFixture()
    let methods = try #require(try fixture.call("initialize")["result"]?["capabilities"]?["methods"])
    #expect(Set(methods.elements.map { $0.string! }) == documented)
  }

  @Test func initializeNamesTheServer() throws {
    let fixture = try ServiceFixture()
    let result = try #require(try fixture.call("initialize", #"{"processId":null,"capabilities":{}}"#)["result"])
    #expect(result["serverInfo"]?["name"]?.string == "netmodel")
    #expect(result["serverInfo"]?["version"]?.string == netmodelVersion)
    #expect(result["protocolVersion"]?.string == "1.0")
  }

  @Test(arguments: [nil, "null", "[]", "{}"])
  func paramsAbsentNullOrEmptyAreAllAccepted(params: String?) throws {
    let fixture = try ServiceFixture()
    let reply = try fixture.call("stats", params)
    #expect(reply["result"]?["requests"]?["byMethod"]?["stats"]?.integer == 1)
  }

  @Test func anUnexpectedParamIsNamedInDataPath() throws {
    let fixture = try ServiceFixture()
    let reply = try fixture.call("stats", #"{"verbose":true}"#)
    #expect(reply["error"]?["code"]?.integer == -32602)
    #expect(reply["error"]?["data"]?["path"]?.string == "/verbose")
    let positional = try fixture.call("stats", "[1]")
    #expect(positional["error"]?["data"]?["path"]?.string == "")
  }

  @Test func statsCountsRequestsErrorsAndBytes() throws {
    let fixture = try ServiceFixture()
    _ = try fixture.call("initialize")
    _ = try fixture.call("nope")
    let stats = try #require(try fixture.call("stats")["result"])
    #expect(stats["requests"]?["total"]?.integer == 3)
    #expect(stats["requests"]?["byMethod"]?["initialize"]?.integer == 1)
    #expect(stats["errors"]?["byCode"]?["-32601"]?.integer == 1)
    #expect(stats["connections"]?["open"]?.integer == 1)
    #expect((stats["bytes"]?["in"]?.integer ?? 0) > 100)
    #expect((stats["bytes"]?["out"]?.integer ?? 0) > 100)
  }

  @Test func afterTheStdioOwnersShutdownRequestsAreRefusedAndExitEndsWithZero() throws {
    let fixture = try ServiceFixture(transport: .stdio)
    #expect(try fixture.call("shutdown")["result"]?.isNull == true)
    let refused = try fixture.call("stats")
    #expect(refused["error"]?["code"]?.integer == -32005)
    #expect(fixture.service.exitCode == nil)
    try fixture.peer.send(#"{"jsonrpc":"2.0","method":"exit"}"#)
    _ = try fixture.peer.drain()
    #expect(fixture.service.exitCode == 0)
    #expect(fixture.service.loop.isStopping)
  }

  @Test func theStdioOwnersExitWithoutShutdownEndsWithOne() throws {
    let fixture = try ServiceFixture(transport: .stdio)
    try fixture.peer.send(#"{"jsonrpc":"2.0","method":"exit"}"#)
    _ = try fixture.peer.drain()
    #expect(fixture.service.exitCode == 1)
  }
}
