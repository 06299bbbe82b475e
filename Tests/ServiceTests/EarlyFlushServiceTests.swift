import EventLoop
import JSON
import JSONRPC
import NetworkModels
import Posix
import Service
import Testing

/// The service lets a read's replies go out while the read is answered, but never
/// at the price of an fsync: the turn's intents keep one group commit.
@Suite struct EarlyFlushServiceTests {
  final class Served {
    let path: String
    let loop: EventLoop
    let journal: Journal
    let service: NetmodelService
    let peer = MemoryPeer()

    init() throws {
      path = try FileSystem.makeTemporaryFolder(prefix: "netmodel-early-flush-")
      loop = try EventLoop(clock: ManualClock())
      // One journal for the intents and the local backend, as `serve` has it.
      journal = try Journal(folder: try StateFolder(path: path))
      let store = FollowStore(loop: loop, backend: try LocalBackend(loop: loop, journal: journal))
      service = NetmodelService(server: RPCServer(loop: loop), store: store, outbox: try Outbox(journal: journal))
      service.server.attach(peer)
    }

    deinit { FileSystem.removeTree(path) }

    var replyCount: Int { peer.received.filter { $0 == 0x0A }.count }

    func send(_ lines: [String]) {
      Array(lines.map { $0 + "\n" }.joined().utf8).withUnsafeBytes { peer.write($0) }
    }

    func run(untilReplies count: Int) throws {
      var turns = 0
      while replyCount < count && turns < 100 {
        turns += 1
        try loop.runOnce(wait: false)
      }
      #expect(replyCount == count)
    }
  }

  private static func read(_ id: Int, _ entity: String = "a") -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"getFollowState","params":{"kind":"artist","id":"\#(entity)"}}"#
  }

  private static func follow(_ id: Int, _ entity: String) -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"follow","params":{"kind":"artist","id":"\#(entity)"}}"#
  }

  @Test func cachedReadsOfOneReadAreWrittenInParts() throws {
    let served = try Served()
    served.send([Self.read(1)])
    try served.run(untilReplies: 1)
    let writes = served.peer.writeCount

    served.send((2...101).map { Self.read($0) })
    try served.loop.runOnce(wait: false)
    #expect(served.replyCount == 101)
    #expect(served.peer.writeCount - writes == 4)
  }

  @Test func readsBehindAFollowWaitForTheTurnsOneFsync() throws {
    let served = try Served()
    served.send([Self.read(1)])
    try served.run(untilReplies: 1)
    let (writes, syncs) = (served.peer.writeCount, served.journal.syncedCommitCount)

    var id = 1
    var burst: [String] = []
    for entity in ["b", "c", "d"] {
      id += 1
      burst.append(Self.follow(id, entity))
      for _ in 0..<40 {
        id += 1
        burst.append(Self.read(id))
      }
    }
    served.send(burst)
    try served.loop.runOnce(wait: false)
    // From the first follow on an intent waits for its fsync: nothing goes out before
    // the turn's commit, which makes all three durable at once.
    #expect(served.journal.syncedCommitCount - syncs == 1)
    #expect(served.peer.writeCount - writes == 1)
    #expect(served.replyCount == 1 + 3 * 41)
  }
}
