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
  /// Replies waiting for one peer, in bytes, above which its messages are not read;
  /// also the size a batch's reply stops growing at (see `Connection.maxUnreadBytes`).
  public let maxUnreadBytes: Int
  /// The most elements a batch may have.
  public let maxBatchElements: Int
  /// The most requests of one peer that may wait for an answer before its messages
  /// are not read (see `Connection.maxPendingRequests`).
  public let maxPendingRequests: Int
  /// How long the final flush at exit waits for peers to take their replies.
  public var shutdownTimeout = RPCServer.defaultShutdownTimeout

  public static let defaultShutdownTimeout = Duration.seconds(3)

  /// Called when stdin ends: the host that spawned us is gone.
  public var onStdioEnded: (() -> Void)?
  /// Called for every closed connection: what a higher layer keeps for it (its
  /// subscriptions) goes with it.
  public var onConnectionClosed: ((Connection) -> Void)?

  public private(set) var connections: [Int: Connection] = [:]
  private var needsFlush: [Connection] = []
  private var lastFlushIteration: UInt64 = 0
  private var flushing = false
  /// Runs once per loop iteration just before replies are written: where the outbox
  /// makes the iteration's mutations durable (group commit), so no reply promises what
  /// a crash could lose.
  public var preFlushHook: (() -> Void)?
  /// Whether the output of a turn may be written before the turn ends, every
  /// `Connection.earlyFlushReplies` replies of one peer's read (the hook runs first, as
  /// at the turn's end). The service says no while an intent waits for its fsync, so
  /// a burst of mutations stays one group commit; unset, always.
  public var mayFlushEarly: (() -> Bool)?
  private var listeners: [Listener] = []
  private var nextConnectionID = 1
  /// Stdio connections whose end of input was logged as their close.
  private var endedStdio: Set<Int> = []
  private let readBuffer: ReadBuffer

  public init(
    loop: EventLoop, dispatcher: Dispatcher = Dispatcher(), maxMessageBytes: Int = 16 << 20,
    maxUnreadBytes: Int = Connection.defaultMaxUnreadBytes,
    maxBatchElements: Int = Connection.defaultMaxBatchElements,
    maxPendingRequests: Int = Connection.defaultMaxPendingRequests, readBufferBytes: Int = 64 << 10
  ) {
    self.loop = loop
    readBuffer = ReadBuffer(capacity: readBufferBytes)
    self.dispatcher = dispatcher
    self.maxMessageBytes = maxMessageBytes
    self.maxUnreadBytes = maxUnreadBytes
    self.maxBatchElements = maxBatchElements
    self.maxPendingRequests = maxPendingRequests
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
  public func attach(
    input: FileDescriptor, output: FileDescriptor, transport: Connection.Transport, peerUser: UserID? = nil
  ) throws(Errno) -> Connection {
    try attach(input: input, output: output, transport: transport, peerUser: peerUser, memory: nil)
  }

  /// Serves a peer in this process, as a socket peer (see `MemoryPeer`).
  @discardableResult
  public func attach(_ peer: MemoryPeer) -> Connection {
    let none = FileDescriptor(rawValue: -1)
    // Attaching a memory peer makes no system call, so it cannot fail.
    return try! attach(input: none, output: none, transport: .socket, peerUser: peer.peerUser, memory: peer)
  }

  private func attach(
    input: FileDescriptor, output: FileDescriptor, transport: Connection.Transport, peerUser: UserID?,
    memory: MemoryPeer?
  ) throws(Errno) -> Connection {
    let connection = Connection(
      id: nextConnectionID, loop: loop, input: input, output: output, transport: transport,
      maxMessageBytes: maxMessageBytes, maxUnreadBytes: maxUnreadBytes, maxBatchElements: maxBatchElements,
      maxPendingRequests: maxPendingRequests, owner: self, dispatcher: dispatcher, statistics: statistics,
      readBuffer: readBuffer,
      memory: memory)
    connection.peerUser = peerUser
    nextConnectionID += 1
    try connection.start()
    connections[connection.id] = connection
    statistics.connectionsOpen += 1
    statistics.connectionsTotal += 1
    // A socket peer is told of at info once it names itself (`connection.client`): a
    // script that runs `netmodel call` a line would otherwise log two lines a call.
    Log.event(
      transport == .stdio ? .info : .debug, "connection.open", "a connection opened",
      [.init("connection", connection.id), .init("transport", transport == .stdio ? "stdio" : "socket")])
    return connection
  }

  /// Listens on a Unix socket at `path` (see `UnixSocket.listen` for the rules).
  public func listen(path: String) throws(UnixSocket.ListenError) {
    listeners.append(try Listener(path: path, loop: loop) { [unowned self] in self.acceptedPeer($0, $1) })
    Log.event(.info, "listening", "listening on a socket", [.init("path", path)])
  }

  /// Serves a listening socket passed by a service manager (`SocketActivation`);
  /// its path is left in place at exit.
  public func listen(inherited socket: SocketActivation.Inherited) throws(UnixSocket.ListenError) {
    listeners.append(
      try Listener(fd: socket.fd, path: socket.path, ownsPath: false, loop: loop) { [unowned self] in
        self.acceptedPeer($0, $1)
      })
    Log.event(
      .info, "listening", "listening on the socket the service manager passed",
      [.init("path", socket.path), .init("inherited", true)])
  }

  private func acceptedPeer(_ fd: FileDescriptor, _ user: UserID) {
    do {
      try attach(input: fd, output: fd, transport: .socket, peerUser: user)
    } catch {
      Log.warn("cannot serve a new connection: \(error)")
      fd.close()
    }
  }

  /// Writes whatever each connection has queued, without waiting.
  public func flushAll() {
    lastFlushIteration = loop.iteration
    writeQueued()
  }

  /// The pre-flush hook, then every connection's queued bytes.
  private func writeQueued() {
    flushing = true
    defer { flushing = false }
    preFlushHook?()
    while !needsFlush.isEmpty {
      let batch = needsFlush
      needsFlush.removeAll(keepingCapacity: true)
      for connection in batch { connection.flush() }
    }
  }

  /// Before exit: stop listening, write every queued byte, and close the sockets (but
  /// those that stay open until the process ends: the kernel closes them then).
  ///
  /// The loop has ended, so this waits for the peers itself, all at once, but no longer
  /// than `shutdownTimeout`: a peer that does not read must not keep the process
  /// (and what runs after this, such as the clean-shutdown compaction) from ending.
  /// What a peer has not taken by then is dropped, with a warning.
  /// Requests still pending are answered `goingAway`.
  public func shutDown(answeringPending goingAway: ResponseError) {
    for listener in listeners { listener.close() }
    listeners.removeAll()
    for connection in connections.values { connection.failPendingRequests(goingAway) }
    flushAll()
    // The real clock, not the loop's: a test's manual clock would never reach the deadline.
    let clock = MonotonicClock()
    let deadline = clock.now + shutdownTimeout
    var waiting = connections.values.sorted(by: { $0.id < $1.id }).filter { $0.unsentByteCount > 0 }
    while !waiting.isEmpty {
      let now = clock.now
      guard now < deadline else { break }
      waitUntilAnyWritable(waiting, timeout: deadline - now)
      for connection in waiting { connection.flush() }
      waiting.removeAll { $0.isClosed || $0.unsentByteCount == 0 }
    }
    for connection in waiting {
      Log.warn(
        "connection \(connection.id): \(connection.unsentByteCount) bytes of replies not taken by the peer "
          + "within \(shutdownTimeout.roundedUpMilliseconds) ms of shutting down (--shutdown-timeout-ms); dropped")
    }
    for connection in connections.values.sorted(by: { $0.id < $1.id }) {
      connection.flushNotificationFailures()
      if connection.transport == .socket {
        if !connection.staysOpenUntilProcessExit { connection.close() }
      } else if endedStdio.insert(connection.id).inserted {
        // Stdio stays open to the end of the process; its session ends here.
        Log.event(.info, "connection.close", "a connection closed (the server stops)", connection.logFields)
      }
    }
  }

  /// Waits until one of the connections' outputs can take bytes, or `timeout`.
  private func waitUntilAnyWritable(_ waiting: [Connection], timeout: Duration) {
    guard let epoll = try? Epoll() else {
      waiting[0].outputDescriptor.waitUntilWritable(timeout: timeout)
      return
    }
    var polled = 0
    for (index, connection) in waiting.enumerated() {
      // A descriptor epoll refuses (a regular file) never makes a writer wait.
      if (try? epoll.add(connection.outputDescriptor, events: .writable, token: UInt64(index))) != nil { polled += 1 }
    }
    guard polled == waiting.count else { return }
    try? epoll.wait(timeout: timeout) { _, _ in }
  }
}

extension RPCServer: ConnectionOwner {
  func connectionNeedsFlush(_ connection: Connection) {
    needsFlush.append(connection)
    // Output queued by a hook that runs after this iteration's flush (or from another
    // place past it) must not wait for the next event: run one more iteration now.
    if lastFlushIteration == loop.iteration && !flushing { loop.execute {} }
  }

  /// Not marked as the iteration's flush: the turn's end writes again.
  func connectionQueuedManyReplies(_ connection: Connection) {
    guard !flushing, mayFlushEarly?() ?? true else { return }
    writeQueued()
  }

  func connectionDidReachEndOfInput(_ connection: Connection) {
    Log.debug("connection \(connection.id): end of input")
    if connection.transport == .stdio {
      // The end of stdin is the end of that session (the server stops): its last line.
      if endedStdio.insert(connection.id).inserted {
        Log.event(.info, "connection.close", "a connection closed (end of input)", connection.logFields)
      }
      onStdioEnded?()
    }
  }

  func connectionDidClose(_ connection: Connection) {
    guard connections.removeValue(forKey: connection.id) != nil else { return }
    statistics.connectionsOpen -= 1
    connection.flushNotificationFailures()
    if !endedStdio.contains(connection.id) {
      Log.event(
        connection.clientName == nil ? .debug : .info, "connection.close", "a connection closed", connection.logFields)
    }
    onConnectionClosed?(connection)
    // A descriptor was freed: a listener that ran out of them may accept again.
    for listener in listeners { listener.descriptorFreed() }
  }
}
