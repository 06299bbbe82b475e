import EventLoop
import JSON
import JSONRPC
import NetworkModels
import Posix

public let netmodelVersion = "0.1.0"
public let protocolVersion = "1.0"

/// The service: registers the JSON-RPC methods and keeps the process's lifecycle
/// (LSP's `shutdown` then `exit`). Later layers (models, backends) plug in here.
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
  public let store: FollowStore
  public let lists: ListStore
  public let preloader: Preloader
  public var configuration: Configuration
  /// Made durable once per loop iteration, before replies are written.
  public let outbox: Outbox?
  let subscriptions = SubscriptionHub()
  /// Responders of `await: true` mutations not yet settled, by responder.
  var awaitedMutations: [ObjectIdentifier: (Responder, EntityKey)] = [:]
  /// Replies of this turn's mutations, held until their intents are on disk.
  var repliesAwaitingCommit: [(Responder, EntityState)] = []
  public var loop: EventLoop { server.loop }
  /// A new random id per process start: a client that sees another one after a
  /// reconnect knows the server restarted (versions still never go backwards on one
  /// state folder; see `VersionBase`).
  public let instance: String
  public private(set) var shutdownRequested = false
  /// The process's exit code once the loop stops; nil while running.
  public private(set) var exitCode: Int32?

  private lazy var discoverDocument: JSON = {
    do {
      return try JSON.parse(openRPCDocumentText)
    } catch {
      fatalError("the embedded OpenRPC document does not parse: \(error)")
    }
  }()

  /// Without a store, follows live in memory only (tests, fuzzing).
  /// `instance` is random unless given (the fuzzer compares two runs byte for byte).
  public init(
    server: RPCServer, store: FollowStore? = nil, outbox: Outbox? = nil, configuration: Configuration = Configuration(),
    instance: String = NetmodelService.newInstanceID()
  ) {
    self.server = server
    self.instance = instance
    self.store = store ?? FollowStore(loop: server.loop, backend: MemoryBackend(loop: server.loop))
    self.lists = ListStore(store: self.store)
    self.lists.eviction = configuration.listEviction
    self.preloader = Preloader(store: self.store)
    self.outbox = outbox
    self.configuration = configuration
    if let backend = self.store.backend.underlying as? ConfigurableBackend {
      self.configuration.environment = backend.environment
    }
    registerLifecycleMethods()
    registerStats()
    registerFollowMethods()
    registerSubscriptionMethods()
    registerListMethods()
    registerPreloadMethods()
    registerConfigure()
    // Weak: the server and the store may outlive this service (the fuzzer makes a new
    // service on the same server after `exit`), and a hook must then do nothing.
    self.store.onChange = { [weak self] state in
      self?.subscriptions.publish(state)
      self?.lists.entityChanged(state.key)
    }
    self.store.onConfirmed = { [weak self] key in self?.lists.mutationConfirmed(key) }
    lists.onChange = { [weak self] key in self?.subscriptions.publish(list: key) }
    lists.hasSubscribers = { [weak self] key in self?.subscriptions.hasSubscribers(key) ?? false }
    // Eviction keeps what anyone still needs: a subscription by exact topic, a list
    // in memory holding the entity, a preload.
    self.store.isHeld = { [weak self] key in
      guard let self else { return false }
      return self.subscriptions.isSubscribed(key) || self.lists.holds(key) || self.preloader.isBusy(key)
    }
    subscriptions.encodeList = { [weak self] key, buffer in
      guard let self, let snapshot = self.lists.snapshot(key) else {
        return buffer.append(contentsOf: JSONLiteral.null)
      }
      self.encode(snapshot, into: &buffer)
    }
    server.onConnectionClosed = { [weak self] connection in
      self?.subscriptions.connectionClosed(connection)
      self?.preloader.hostGone(connection.id)
    }
    server.addPreFlushHook { [weak self] in
      guard let self else { return }
      self.commitIntents()
      self.subscriptions.drainAll()
    }
  }

  /// Ends the process cleanly: write everything queued, then stop the loop.
  /// SIGTERM, SIGINT and EOF on stdin come here with 0; `exit` with 0 or 1.
  public func terminate(exitCode code: Int32) {
    guard exitCode == nil else { return }
    exitCode = code
    failAwaitedMutations()
    loop.stop()
  }

  /// An awaited mutation still pending at exit is answered -32005 with its state, like
  /// every other error of a mutation: the intent stays in the outbox for the next start.
  private func failAwaitedMutations() {
    let waiting = awaitedMutations
    awaitedMutations.removeAll()
    for (responder, key) in waiting.values {
      let data = JSON.object().set("retryable", .bool(true))
      data.set("state", store.state(key).json)
      responder.fail(
        ResponseError(.shuttingDown, "server shutting down; the intent is kept for its next start", data: data))
    }
  }

  public static func newInstanceID() -> String {
    var generator = SystemRandomNumberGenerator()
    let value = generator.next() as UInt64
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
  }

  private func registerLifecycleMethods() {
    let dispatcher = server.dispatcher
    dispatcher.gate = { [unowned self] method in
      guard self.shutdownRequested, method != "exit" else { return nil }
      return ResponseError(
        .shuttingDown, "server shutting down", data: JSON.object().set("retryable", .bool(false)))
    }
    dispatcher.register("initialize") { [unowned self] request throws(ResponseError) in
      _ = try Params(request)
      request.responder.succeed(self.initializeResult())
    }
    dispatcher.register("shutdown") { [unowned self] request throws(ResponseError) in
      try Params.expectNone(request)
      self.shutdownRequested = true
      request.responder.succeed(.null())
    }
    dispatcher.registerNotification("exit") { [unowned self] _, _ in
      self.terminate(exitCode: self.shutdownRequested ? 0 : 1)
    }
    dispatcher.register("rpc.discover") { [unowned self] request throws(ResponseError) in
      try Params.expectNone(request)
      request.responder.succeed(self.discoverDocument)
    }
  }

  /// Makes this turn's intents durable, then releases the replies that promise them.
  /// A mutation whose intent could not be saved was never accepted: the entity goes
  /// back to the intent on disk and the reply is -32001 (retryable), so nothing is
  /// acknowledged that a crash could lose.
  public func commitIntents() {
    var notSaved: [EntityKey: FollowFailure] = [:]
    // Every turn: a turn with only settlements writes them without an fsync.
    if let outbox, case .failure(let unsaved) = outbox.commitOrTakeBack() {
      let failure = FollowFailure(.unavailable, "could not save the intent: \(unsaved.error)")
      for (key, durable) in unsaved.intents {
        notSaved[key] = failure
        store.intentNotSaved(key, durable: durable, failure: failure)
      }
    }
    guard !repliesAwaitingCommit.isEmpty else { return }
    let replies = repliesAwaitingCommit
    repliesAwaitingCommit.removeAll()
    for (responder, state) in replies {
      if let failure = notSaved[state.key] {
        responder.fail(failure.responseError(state: store.state(state.key)))
      } else {
        responder.succeed(state)
      }
    }
  }

  private func registerConfigure() {
    server.dispatcher.register("configure") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      let backend = self.store.backend.underlying as? ConfigurableBackend
      let previousEnvironment = self.configuration.environment
      let environment = try params.string("environment")
      if let environment {
        if environment.isEmpty { throw .invalidParams("environment must not be empty", path: "/environment") }
        if let backend, !backend.environmentNames.contains(environment) {
          throw .invalidParams(
            "no environment \(environment) (configured: \(backend.environmentNames.joined(separator: ", ")))",
            path: "/environment")
        }
      }
      if params.contains("authToken") {
        // null clears the token; a string sets it.
        self.configuration.authToken = try params.string("authToken")
        backend?.setAuthToken(self.configuration.authToken)
        // Intents and reads refused for want of credentials go out again now.
        if environment == nil || environment == previousEnvironment { self.store.credentialsChanged() }
      }
      if let environment, environment != previousEnvironment {
        self.configuration.environment = environment
        if let backend {
          _ = backend.selectEnvironment(environment)
          self.switchEnvironment(from: previousEnvironment, to: environment)
        }
      }
      request.responder.succeed(JSON.object().set("environment", .string(self.configuration.environment)))
    }
  }

  /// Intents and states belong to the environment they were made in or read from:
  /// the old environment's pending intents stay in the outbox for it (sent when it is
  /// active again, in this run or a later one), every cached state and list is dropped
  /// and read again here, and this environment's waiting intents are sent.
  private func switchEnvironment(from old: String, to new: String) {
    Log.info("environment \(old) → \(new): \(old)'s pending intents wait for it; states are read again in \(new)")
    outbox?.switchEnvironment(to: new)
    store.environmentChanged(
      awaitFailure: FollowFailure(
        .unavailable,
        "the environment changed to \(new); this intent stays pending for \(old) and is sent when \(old) is active again"
      ))
    lists.environmentChanged()
  }

  private func initializeResult() -> JSON {
    let methods = JSON.array()
    for method in server.dispatcher.methods { methods.append(.string(method)) }
    return JSON.object()
      .set(
        "serverInfo",
        JSON.object().set("name", .string("netmodel")).set("version", .string(netmodelVersion))
          .set("instance", .string(instance))
      )
      .set("protocolVersion", .string(protocolVersion))
      .set("capabilities", JSON.object().set("methods", methods))
  }
}
