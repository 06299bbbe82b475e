import EventLoop
import JSON
import Posix

/// The transports: stdio and Unix-socket connections, all on one loop, all answered
/// by one dispatcher. Flushes every connection that has output once per iteration.
///
/// Must be used on the loop's thread.
public final class RPCServer {
  public let loop: EventLoop
  public let dispatcher: Dispatcher
  public var statistics: RPCStatistics { dispatcher.statistics }
  public let maxMessageBytes: Int

  /// Called when stdin ends: the host that spawned us is gone.
  public var onStdioEnded: (() -> Void)?
  /// Called for every new connection and every closed one (for subscriptions later).
  public var onConnectionOpened: ((Connection) -> Void)?
  public var onConnectionClosed: ((Connection) -> Void)?

  public private(set) var connections: [Int: Connection] = [:]
  private var needsFlush: [Connection] = []
  private var lastFlushIteration: UInt64 = 0
  private var flushing = false
  private var preFlushHooks: [() -> Void] = []
  private var listeners: [Listener] = []
  private var nextConnectionID = 1
  private let readBuffer = ReadBuffer()

  public init(loop: EventLoop, dispatcher: Dispatcher = Dispatcher(), maxMessageBytes: Int = 16 << 20) {
    self.loop = loop
    self.dispatcher = dispatcher
    self.maxMessageBytes = maxMessageBytes
    loop.addBeforeSleepHook { [unowned self] in self.flushAll() }
  }

  /// Serves a peer on stdin/stdout.
  @discardableResult
  public func attachStdio() throws(Errno) -> Connection {
    try attach(input: .standardInput, output: .standardOutput, transport: .stdio)
  }

  /// Serves a peer on the given descriptors; the server closes them when done
  /// (sockets only: stdio stays open for the process).
  @discardableResult
  public func attach(input: FileDescriptor, output: FileDescriptor, transport: Connection.Transport) throws(Errno)
    -> Connection
  {
    let connection = Connection(
      id: nextConnectionID, loop: loop, input: input, output: output, transport: transport,
      maxMessageBytes: maxMessageBytes, owner: self, statistics: statistics, readBuffer: readBuffer)
    nextConnectionID += 1
    try connection.start()
    connections[connection.id] = connection
    statistics.connectionsOpen += 1
    statistics.connectionsTotal += 1
    Log.debug("connection \(connection.id) opened (\(transport))")
    onConnectionOpened?(connection)
    return connection
  }

  /// Listens on a Unix socket at `path` (see `UnixSocket.listen` for the rules).
  public func listen(path: String) throws(UnixSocket.ListenError) {
    let listener = try Listener(path: path, loop: loop) { [unowned self] fd in
      do {
        try self.attach(input: fd, output: fd, transport: .socket)
      } catch {
        Log.warn("cannot serve a new connection: \(error)")
        fd.close()
      }
    }
    listeners.append(listener)
    Log.info("listening on \(path)")
  }

  public var socketPaths: [String] { listeners.map(\.path) }

  /// Runs `hook` once per loop iteration just before replies are written: where the
  /// outbox makes the iteration's mutations durable (group commit), so no reply
  /// promises what a crash could lose.
  public func addPreFlushHook(_ hook: @escaping () -> Void) {
    preFlushHooks.append(hook)
  }

  /// Writes whatever each connection has queued, without waiting.
  public func flushAll() {
    lastFlushIteration = loop.iteration
    flushing = true
    defer { flushing = false }
    for hook in preFlushHooks { hook() }
    while !needsFlush.isEmpty {
      let batch = needsFlush
      needsFlush.removeAll(keepingCapacity: true)
      for connection in batch { connection.flush() }
    }
  }

  /// Before exit: stop listening, write every queued byte (waiting if needed, since the
  /// loop is about to end), and close the sockets.
  public func shutDown() {
    for listener in listeners { listener.close() }
    listeners.removeAll()
    let goingAway = ResponseError(
      .shuttingDown, "server shutting down", data: JSON.object().set("retryable", .bool(false)))
    for connection in connections.values { connection.failPendingRequests(goingAway) }
    flushAll()
    for connection in connections.values.sorted(by: { $0.id < $1.id }) {
      connection.flushBlocking()
      if connection.transport == .socket { connection.close() }
    }
  }
}

extension RPCServer: ConnectionOwner {
  func connection(_ connection: Connection, didReceive frame: Frame) {
    dispatcher.handle(frame, from: connection)
  }

  func connectionNeedsFlush(_ connection: Connection) {
    needsFlush.append(connection)
    // Output queued by a hook that runs after this iteration's flush (or from another
    // place past it) must not wait for the next event: run one more iteration now.
    if lastFlushIteration == loop.iteration && !flushing { loop.execute {} }
  }

  func connectionDidReachEndOfInput(_ connection: Connection) {
    Log.debug("connection \(connection.id): end of input")
    if connection.transport == .stdio { onStdioEnded?() }
  }

  func connectionDidClose(_ connection: Connection) {
    guard connections.removeValue(forKey: connection.id) != nil else { return }
    statistics.connectionsOpen -= 1
    Log.debug("connection \(connection.id) closed")
    onConnectionClosed?(connection)
  }
}
