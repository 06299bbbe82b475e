import EventLoop
import JSON
import Posix

/// What a connection tells the server that owns it.
protocol ConnectionOwner: AnyObject {
  func connectionNeedsFlush(_ connection: Connection)
  /// `Connection.earlyFlushReplies` replies are queued: a chance to write them before
  /// the loop's turn ends.
  func connectionQueuedManyReplies(_ connection: Connection)
  func connectionDidReachEndOfInput(_ connection: Connection)
  func connectionDidClose(_ connection: Connection)
}

/// One peer: bytes in through a frame splitter, bytes out through a queue that is
/// flushed without ever blocking the loop. Knows nothing of what the messages mean.
///
/// Must be used on the loop's thread.
public final class Connection {
  public enum Transport: Sendable, Equatable {
    case stdio
    case socket
  }

  public let id: Int
  public let transport: Transport
  /// What the client called itself in `initialize` (`clientInfo`, "used in logs"), cut
  /// to `Connection.maxClientNameScalars`: named in this connection's log lines.
  public var clientName: String?
  public var clientVersion: String?
  /// How many failed notifications of this peer the log tells one by one.
  var notificationFailures = LogBudget()
  /// The framing the peer chose; replies use it. nil until the peer's first byte.
  public var framing: Framing? { splitter.framing }
  public private(set) var isClosed = false
  /// The largest message this connection accepts.
  public var maxMessageBytes: Int { splitter.maxMessageBytes }
  /// Above this many bytes of replies waiting for the peer (queued, or held for a
  /// batch reply being built) the connection reads none of its messages until the
  /// peer has read them; a batch's reply stops growing at this size too.
  public let maxUnreadBytes: Int
  /// The most elements a batch may have; a longer one is refused whole.
  public let maxBatchElements: Int
  /// The most requests of this peer that may wait for an answer (a backend call, for
  /// example); at that many, the connection reads none of its messages until one is
  /// answered.
  public let maxPendingRequests: Int
  /// Called when every queued byte has been taken by the peer: the moment to queue
  /// more of what was held back (coalesced notifications).
  public var onDrained: (() -> Void)?
  /// Who the peer is, as the kernel said when it connected (SO_PEERCRED); nil for
  /// stdio, whose peer is the process that started this one.
  public internal(set) var peerUser: UserID?
  /// While set, every request of this peer is answered with it instead of being run
  /// (the service's refusal after this session's `shutdown`); the dispatcher's own
  /// refusal covers every peer.
  public var refusal: ResponseError? {
    didSet { isRefusing = refusal != nil }
  }
  /// Whether `refusal` is set, read for every request (see `Dispatcher.isRefusing`).
  private(set) var isRefusing = false
  /// Left open by `RPCServer.shutDown`: the kernel closes it when the process ends, so
  /// this peer's end of input says the process is gone (`netmodel stop` waits for it).
  public var staysOpenUntilProcessExit = false
  /// `closeOnceFlushed()` was called: nothing more is read, and the connection
  /// closes once the peer has taken what is queued.
  public private(set) var isEnding = false

  private let loop: EventLoop
  private let input: FileDescriptor
  private let output: FileDescriptor
  /// A peer in this process: bytes go through it, not through the descriptors.
  private let memory: MemoryPeer?
  private weak var owner: ConnectionOwner?
  /// Where frames go. Held strongly, not through the weak `owner`: loading a weak
  /// reference per frame, and retaining an object that has one, is slow. The dispatcher
  /// holds no connection, so this makes no cycle.
  private let dispatcher: Dispatcher
  private let statistics: RPCStatistics
  private let readBuffer: ReadBuffer
  private var splitter: FrameSplitter
  private var outBuffer: [UInt8] = []
  private var outOffset = 0
  private var scratch: [UInt8] = []
  private var notificationScratch: [UInt8] = []
  /// Where the replies queued since the last flush begin in `outBuffer`.
  private var repliesStart: Int?
  /// Replies queued since the last flush.
  private var repliesQueued = 0
  private var flushScheduled = false
  private var inputRegistration: EventLoop.Registration?
  private var outputRegistration: EventLoop.Registration?
  private var wantsWritable = false
  private var readPaused = false
  private var inputEnded = false
  /// The socket's peer closed both ways: nobody reads what is still to be answered.
  private var peerClosedBothWays = false
  private let inputMayBlock: Bool
  /// stdin is a regular file: read in tasks, not on readiness.
  private var readsInTasks = false
  /// Bytes of batch replies being built for this peer (see `BatchReply`).
  var heldReplyBytes = 0
  /// Requests whose handler returned without answering, batches' and notifications'
  /// included (see `Responder.markPending`).
  private(set) var pendingRequestCount = 0
  /// Requests answered later than the handler's return, by id, for `$/cancelRequest`.
  var pendingRequests: [RequestID: Responder] = [:]

  /// The default of `maxUnreadBytes`.
  public static let defaultMaxUnreadBytes = 8 << 20
  /// The default of `maxBatchElements`: with error replies of about 200 bytes, even a
  /// batch answered only with errors stays well under `defaultMaxUnreadBytes`.
  public static let defaultMaxBatchElements = 10_000
  /// The default of `maxPendingRequests`.
  public static let defaultMaxPendingRequests = 10_000
  /// How many replies of one read wait before the owner may write them while the rest
  /// of the read is still being answered. Written only at the turn's end, a pipelining
  /// peer and the server take turns: it waits for the whole window's replies, then the
  /// server for its next requests. Written in parts, both work at once
  /// (bench/README.md, "Replies written while the read is answered").
  public static let earlyFlushReplies = 32

  init(
    id: Int, loop: EventLoop, input: FileDescriptor, output: FileDescriptor, transport: Transport,
    maxMessageBytes: Int, maxUnreadBytes: Int = Connection.defaultMaxUnreadBytes,
    maxBatchElements: Int = Connection.defaultMaxBatchElements,
    maxPendingRequests: Int = Connection.defaultMaxPendingRequests, owner: ConnectionOwner, dispatcher: Dispatcher,
    statistics: RPCStatistics, readBuffer: ReadBuffer, memory: MemoryPeer? = nil
  ) {
    self.id = id
    self.maxUnreadBytes = maxUnreadBytes
    self.maxBatchElements = maxBatchElements
    self.maxPendingRequests = maxPendingRequests
    self.loop = loop
    self.input = input
    self.output = output
    self.transport = transport
    self.owner = owner
    self.dispatcher = dispatcher
    self.statistics = statistics
    self.readBuffer = readBuffer
    self.splitter = FrameSplitter(maxMessageBytes: maxMessageBytes)
    self.memory = memory
    if memory != nil {
      inputMayBlock = false
      return
    }
    let inputKind = input.kind
    if inputKind == .stream { try? input.setNonBlocking() }
    if output != input && output.kind == .stream { try? output.setNonBlocking() }
    inputMayBlock = inputKind != .stream
  }

  /// Starts reading. A regular file on stdin cannot be polled; it is read in tasks.
  func start() throws(Errno) {
    if let memory { return memory.attach(self, loop: loop) }
    do {
      inputRegistration = try loop.register(input, events: .readable) { [unowned self] events in
        self.handle(events)
      }
    } catch  where error.code == Errno.notPermitted {
      readsInTasks = true
      // Tasks hold the connection strongly (they stop once it is closed): a weak
      // reference would give it a side table, and every retain of it goes through that.
      loop.execute { self.readUnpollable() }
    }
  }

  // MARK: Writing

  /// Queues one reply in the peer's framing; `encodeBody` writes its JSON text.
  /// The bytes go out when the loop flushes, once per iteration.
  public func send(encodeBody: (inout [UInt8]) -> Void) {
    guard !isClosed else { return }
    if repliesStart == nil { repliesStart = outBuffer.count }
    (framing ?? .contentLength).appendFrame(to: &outBuffer, scratch: &scratch, encodeBody: encodeBody)
    repliesQueued += 1
    scheduleFlush()
  }

  /// Queues one notification ahead of the replies queued since the last flush.
  ///
  /// A peer may stop reading at the reply it waits for: Emacs's jsonrpc.el throws out
  /// of its process filter when a synchronous request's reply arrives, leaving what
  /// follows in the same read unprocessed until more output comes. A state change
  /// written after that reply would wait for the peer's next message; written before
  /// it, it is seen at once. States carry versions, so a reply that comes after a
  /// newer notification is recognised as older.
  public func sendNotification(encodeBody: (inout [UInt8]) -> Void) {
    guard !isClosed else { return }
    guard let start = repliesStart else {
      (framing ?? .contentLength).appendFrame(to: &outBuffer, scratch: &scratch, encodeBody: encodeBody)
      return scheduleFlush()
    }
    notificationScratch.removeAll(keepingCapacity: true)
    (framing ?? .contentLength).appendFrame(to: &notificationScratch, scratch: &scratch, encodeBody: encodeBody)
    outBuffer.insert(contentsOf: notificationScratch, at: start)
    repliesStart = start + notificationScratch.count
    scheduleFlush()
  }

  private func scheduleFlush() {
    if !flushScheduled {
      flushScheduled = true
      owner?.connectionNeedsFlush(self)
    }
  }

  /// Bytes queued but not yet taken by the peer.
  public var unsentByteCount: Int { outBuffer.count - outOffset }

  /// The replies waiting for this peer, queued or held for a batch, pass the limit, or
  /// as many of its requests as allowed wait for an answer: read none of its messages
  /// until it has read its replies, or one is answered.
  var holdsTooMuch: Bool {
    unsentByteCount + heldReplyBytes > maxUnreadBytes || pendingRequestCount >= maxPendingRequests
  }

  func requestBecamePending() {
    pendingRequestCount += 1
  }

  func pendingRequestFinished() {
    pendingRequestCount -= 1
    if readPaused && !isClosed && !holdsTooMuch { resumeReading() }
    // The answer is sent after this returns: looked at once it has been queued.
    if inputEnded { loop.execute { [weak self] in self?.closeIfInputDone() } }
  }

  /// A socket peer that ended its input (`echo … | socat - UNIX:…` half-closes) is
  /// closed once nothing it asked for is left: no request waiting for its answer and no
  /// reply unsent.
  private func closeIfInputDone() {
    guard transport == .socket, inputEnded, !isClosed else { return }
    if peerClosedBothWays || (pendingRequestCount == 0 && unsentByteCount == 0 && !flushScheduled) { close() }
  }

  /// Writes what the peer will take now; waits for writability for the rest.
  func flush() {
    flushScheduled = false
    repliesStart = nil
    repliesQueued = 0
    guard !isClosed else { return }
    while outOffset < outBuffer.count {
      do {
        let offset = outOffset
        let written = try outBuffer.withUnsafeBytes { bytes in
          Result { () throws(Errno) in
            if let memory { return try memory.take(bytes.baseAddress! + offset, count: bytes.count - offset) }
            return try output.write(bytes.baseAddress! + offset, count: bytes.count - offset)
          }
        }.get()
        outOffset += written
        statistics.bytesOut += written
      } catch  where error.isWouldBlock {
        if outOffset > 1 << 20 && outOffset * 2 > outBuffer.count {
          outBuffer.removeSubrange(0..<outOffset)
          outOffset = 0
        }
        setWantsWritable(true)
        return
      } catch {
        Log.debug("connection \(id): write failed: \(error)")
        close()
        return
      }
    }
    outBuffer.removeAll(keepingCapacity: outBuffer.capacity <= 1 << 20)
    outOffset = 0
    setWantsWritable(false)
    onDrained?()
    if readPaused && !isClosed { resumeReading() }
    if isEnding && transport == .socket { close() } else { closeIfInputDone() }
  }

  /// Answers every request still waiting for its handler with `error`: the process is
  /// going away and nobody must wait for an answer that will never come.
  func failPendingRequests(_ error: ResponseError) {
    for responder in pendingRequests.values { responder.fail(error) }
    pendingRequests.removeAll()
  }

  /// Where the replies go: for the final flush, which waits for writability itself.
  var outputDescriptor: FileDescriptor { output }

  // MARK: Closing

  /// Ends a socket peer's session: nothing more of its input is read, and the
  /// connection closes once what is queued for it is written (at once when nothing
  /// is). Stdio is never closed this way: its end is the process's.
  public func closeOnceFlushed() {
    guard transport == .socket, !isClosed, !isEnding else { return }
    isEnding = true
    updateInterest()
    if unsentByteCount == 0 && !flushScheduled { close() }
  }

  public func close() {
    guard !isClosed else { return }
    isClosed = true
    if let inputRegistration { loop.deregister(inputRegistration) }
    if let outputRegistration { loop.deregister(outputRegistration) }
    inputRegistration = nil
    outputRegistration = nil
    for responder in pendingRequests.values { responder.connectionClosed() }
    pendingRequests.removeAll()
    onDrained = nil
    if let memory {
      memory.connectionClosed()
    } else if transport == .socket {
      input.close()
    }
    outBuffer = []
    outOffset = 0
    heldReplyBytes = 0
    repliesStart = nil
    owner?.connectionDidClose(self)
  }

  // MARK: Reading

  private func handle(_ events: IOEvents) {
    if events.contains(.writable) { flush() }
    if isClosed { return }
    if events.contains(.closedBothWays) && transport == .socket {
      peerClosedBothWays = true
      // Half-closed before, with answers pending: now nobody will read them.
      if inputEnded { return close() }
    }
    if isEnding && !events.isDisjoint(with: [.error, .hangUp]) {
      // The peer is gone while its last replies wait: nobody will read them, and its
      // input is not read any more, so the hang-up would be reported again and again.
      return close()
    }
    if readPaused && !events.isDisjoint(with: [.error, .hangUp]) {
      // Reported even while nothing is asked for. On a socket it means the peer is
      // gone both ways: nobody will read what is held. (A pipe's input is not polled
      // while paused; see `pauseReading`.)
      if input == output && transport == .socket {
        Log.debug("connection \(id): hung up with replies unread")
        close()
      }
      return
    }
    if events.contains(.readable) || (!events.isDisjoint(with: [.error, .hangUp]) && !inputEnded) {
      readAvailable()
    }
  }

  private func readAvailable() {
    // Frames left over when reading paused come first.
    deliverFrames()
    // A few reads per wake-up, then back to the loop so other peers get their turn.
    var reads = inputMayBlock ? 1 : 4
    while reads > 0 && !isClosed && !inputEnded && !readPaused && !isEnding {
      reads -= 1
      let count: Int
      do {
        if let memory {
          count = try memory.read(into: readBuffer.pointer, count: readBuffer.capacity)
        } else {
          count = try input.read(into: readBuffer.pointer, count: readBuffer.capacity)
        }
      } catch  where error.isWouldBlock {
        return
      } catch {
        Log.debug("connection \(id): read failed: \(error)")
        endOfInput()
        return
      }
      if count == 0 {
        endOfInput()
        return
      }
      statistics.bytesIn += count
      splitter.append(UnsafeRawBufferPointer(start: readBuffer.pointer, count: count))
      deliverFrames()
    }
  }

  /// What `handle` does for a socket's readable (or hang-up) event, for a `MemoryPeer`.
  func memoryPeerReadable() {
    guard let memory, !isClosed else { return }
    if memory.isClosed {
      peerClosedBothWays = true
      if inputEnded { return close() }
    }
    if readPaused {
      // A socket peer gone both ways while its replies wait: nobody will read them.
      if memory.isClosed { close() }
      return
    }
    readAvailable()
    // Level-triggered, like epoll: what is left after a few reads is read next time.
    if !isClosed && !inputEnded && !readPaused && !isEnding && memory.hasUnread {
      loop.execute { [weak self] in self?.memoryPeerReadable() }
    }
  }

  private func readUnpollable() {
    readAvailable()
    // While paused, `resumeReading` starts this again.
    if !isClosed && !inputEnded && !readPaused {
      loop.execute { self.readUnpollable() }
    }
  }

  /// Hands the buffered frames to the owner one at a time, and stops as soon as the
  /// replies waiting for the peer pass the limit: one read can hold thousands of
  /// small requests, and each may add a large reply. The frames not handed on stay
  /// in the splitter (at most one read's worth, or one message) until the peer reads.
  private func deliverFrames() {
    while !isClosed && !readPaused && !isEnding {
      if holdsTooMuch {
        pauseReading()
        return
      }
      guard let frame = splitter.next() else { return }
      dispatcher.handle(frame, from: self)
      if repliesQueued >= Connection.earlyFlushReplies { owner?.connectionQueuedManyReplies(self) }
    }
  }

  private func pauseReading() {
    guard !readPaused else { return }
    readPaused = true
    Log.debug(
      "connection \(id): reading paused (\(unsentByteCount + heldReplyBytes) bytes of replies unread, "
        + "\(pendingRequestCount) requests pending)")
    if input != output, let inputRegistration {
      // A pipe whose writer is gone reports a hang-up however little is asked for:
      // stop polling it altogether until reading resumes.
      loop.deregister(inputRegistration)
      self.inputRegistration = nil
    } else {
      updateInterest()
    }
  }

  private func resumeReading() {
    guard readPaused else { return }
    readPaused = false
    if input != output && inputRegistration == nil && !inputEnded && !readsInTasks {
      inputRegistration = try? loop.register(input, events: .readable) { [unowned self] events in
        self.handle(events)
      }
    } else {
      updateInterest()
    }
    if readsInTasks {
      loop.execute { self.readUnpollable() }
    } else {
      loop.execute { self.readAvailable() }
    }
  }

  private func endOfInput() {
    guard !inputEnded else { return }
    inputEnded = true
    // Reading stops while paused, so every complete frame was handed on before this.
    if !isClosed, let last = splitter.finishInput() { dispatcher.handle(last, from: self) }
    if let inputRegistration, input != output {
      loop.deregister(inputRegistration)
      self.inputRegistration = nil
    } else {
      updateInterest()
    }
    owner?.connectionDidReachEndOfInput(self)
    closeIfInputDone()
  }

  // MARK: Interest

  private func setWantsWritable(_ wanted: Bool) {
    guard wanted != wantsWritable else { return }
    wantsWritable = wanted
    if input == output {
      updateInterest()
    } else if wanted {
      outputRegistration = try? loop.register(output, events: .writable) { [unowned self] _ in self.flush() }
      if outputRegistration == nil {
        // Not pollable (a regular file): it never blocks, so a blocking flush is fine.
        waitUntilWritable()
        loop.execute { self.flush() }
      }
    } else if let registration = outputRegistration {
      loop.deregister(registration)
      outputRegistration = nil
    }
  }

  private func updateInterest() {
    guard let inputRegistration else { return }
    var events: IOEvents = []
    if !readPaused && !inputEnded && !isEnding { events.insert(.readable) }
    if wantsWritable && input == output { events.insert(.writable) }
    try? loop.modify(inputRegistration, events: events)
  }

  private func waitUntilWritable() {
    output.waitUntilWritable()
  }
}

/// The one buffer every connection reads into; the loop is single-threaded, so they
/// take turns, and a thousand idle connections cost no read buffers.
final class ReadBuffer {
  let capacity: Int
  let pointer: UnsafeMutableRawPointer

  init(capacity: Int = 64 << 10) {
    self.capacity = capacity
    pointer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
  }

  deinit { pointer.deallocate() }
}
