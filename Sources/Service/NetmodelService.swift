import EventLoop
import JSON
import JSONRPC
import NetworkModels
import Posix

public let netmodelVersion = "0.1.0"
public let protocolVersion = "1.0"

/// The service: registers the JSON-RPC methods on the network models (`Models`) and
/// the subscriptions, has the models' intents made durable before a turn's replies
/// are written, and keeps the process's lifecycle (LSP's `shutdown` then `exit`, per
/// session: see `Shutdown`).
///
/// Must be used on the loop's thread.
public final class NetmodelService {
  /// What `configure` and the command line set.
  public struct Configuration {
    /// How old a confirmed state may be and still answer `getFollowState`.
    public var defaultMaxAgeMs: UInt64 = 30_000
    public var environment = "default"
    /// Held for the backend; never logged, echoed or counted.
    public var authToken: String?
    /// How many lists stay in memory, and for how long one nobody uses stays.
    public var listEviction = EvictionPolicy.lists

    public init() {}
  }

  public let server: RPCServer
  public let models: Models
  public var store: FollowStore { models.store }
  public var lists: ListStore { models.lists }
  public var preloader: Preloader { models.preloader }
  public var outbox: Outbox? { models.outbox }
  /// What became of each intent (`getMutations`, the `mutations` topic).
  public let ledger: MutationLedger
  public var configuration: Configuration
  let subscriptions = SubscriptionHub()
  var statsPush = StatsPush()
  public var loop: EventLoop { server.loop }
  /// A new random id per process start: a client that sees another one after a
  /// reconnect knows the server restarted (versions still never go backwards on one
  /// state folder; see `VersionBase`).
  public let instance: String
  public internal(set) var shutdownRequested = false
  /// The socket peer that stopped the daemon (`shutdown {daemon: true}`): its `exit`,
  /// or its going, ends the process.
  var stopperID: Int?
  /// The user allowed to stop the daemon from a socket: the one it runs as.
  public var owner = UnixSocket.currentUID()
  /// Socket sessions ended by their own `exit` (their connections closed, the
  /// process going on).
  public internal(set) var sessionsExited = 0
  /// The process's exit code once the loop stops; nil while running.
  public private(set) var exitCode: Int32?

  var discoverDocument: JSON { NetmodelService.parsedDiscoverDocument }
  /// Parsed once per process, not per service: the fuzzer makes two services per input,
  /// and each parse of the ~120 KB document was thousands of allocations. Only read.
  private static let parsedDiscoverDocument: JSON = {
    do {
      return try JSON.parse(PackageResources.openrpc_json)
    } catch {
      fatalError("the embedded OpenRPC document does not parse: \(error)")
    }
  }()

  /// Shows the models of `store` and `outbox`; without a store, follows live in memory
  /// only (tests, fuzzing), and so does the ledger without one. `instance` is random
  /// unless given (the fuzzer compares two runs byte for byte).
  public init(
    server: RPCServer, store: FollowStore? = nil, outbox: Outbox? = nil, ledger: MutationLedger? = nil,
    configuration: Configuration = Configuration(), instance: String = NetmodelService.newInstanceID()
  ) {
    self.server = server
    self.instance = instance
    self.ledger = ledger ?? MutationLedger()
    self.models = Models(
      store: store ?? FollowStore(loop: server.loop, backend: MemoryBackend(loop: server.loop)), outbox: outbox,
      observer: subscriptions)
    self.models.lists.eviction = configuration.listEviction
    self.configuration = configuration
    if let environment = self.models.environments?.environment {
      self.configuration.environment = environment
    }
    registerMethods()
    connectLedger()
    // Unowned, never weak: one weak reference gives an object a side table, and then
    // every retain and release of it, several a request, costs ~10 times as much. The
    // server may outlive this service (the fuzzer makes a new service on the same
    // server after `exit`): `deinit` takes the hooks back.
    subscriptions.listState = { [unowned self] key in self.models.listState(key) }
    subscriptions.newestVersion = { [unowned self] in self.models.store.versions.newest }
    server.onConnectionClosed = { [unowned self] connection in
      self.subscriptions.connectionClosed(connection)
      self.models.hostGone(connection.id)
      // A stopper that went without its `exit` must not leave a daemon that refuses
      // everyone until something else sends one.
      if connection.id == self.stopperID { self.terminate(exitCode: 0) }
    }
    server.preFlushHook = { [unowned self] in
      self.models.commitIntents()
      self.ledger.commit()
      self.subscriptions.drainAll()
    }
    // An intent waiting for its fsync keeps the turn's output for the turn's end, with
    // every other intent of the turn: one fsync, not one per early write.
    server.mayFlushEarly = { [unowned self] in self.outbox?.needsCommit != true }
  }

  deinit {
    server.onConnectionClosed = nil
    server.preFlushHook = nil
    server.mayFlushEarly = nil
    store.onMutation = nil
    if let timer = statsPush.timer { loop.cancel(timer) }
  }

  /// Ends the process cleanly: write everything queued, then stop the loop.
  /// SIGTERM, SIGINT and EOF on stdin come here with 0; `exit` with 0 or 1.
  public func terminate(exitCode code: Int32) {
    guard exitCode == nil else { return }
    exitCode = code
    models.stopAwaitedMutations()
    loop.stop()
  }

  public static func newInstanceID() -> String {
    var generator = SystemRandomNumberGenerator()
    let value = generator.next() as UInt64
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }
}
