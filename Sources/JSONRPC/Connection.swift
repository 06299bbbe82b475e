import EventLoop
import JSON
import Posix

/// What a connection tells the server that owns it.
protocol ConnectionOwner: AnyObject {
  func connection(_ connection: Connection, didReceive frame: Frame)
  func connectionNeedsFlush(_ connection: Connection)
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
  /// The framing the peer chose; replies use it. nil until the peer's first byte.
  public var framing: Framing? { splitter.framing }
  public private(set) var isClosed = false
  /// The largest message this connection accepts.
  public var maxMessageBytes: Int { splitter.maxMessageBytes }
  /// Higher layers keep per-connection state here (subscriptions, for example).
  public var attachments: [String: AnyObject] = [:]
  /// Called when every queued byte has been taken by the peer: the moment to queue
  /// more of what was held back (coalesced notifications).
  public var onDrained: (() -> Void)?

  private let loop: EventLoop
  private let input: FileDescriptor
  private let output: FileDescriptor
  private weak var owner: ConnectionOwner?
  private let statistics: RPCStatistics
  private let readBuffer: ReadBuffer
  private var splitter: FrameSplitter
  private var outBuffer: [UInt8] = []
  private var outOffset = 0
  private var scratch: [UInt8] = []
  private var notificationScratch: [UInt8] = []
  /// Where the replies queued since the last flush begin in `outBuffer`.
  private var repliesStart: Int?
  private var flushScheduled = false
  private var inputRegistration: EventLoop.Registration?
  private var outputRegistration: EventLoop.Registration?
  private var wantsWritable = false
  private var readPaused = false
  private var inputEnded = false
  private let inputMayBlock: Bool
  /// Requests answered later than the handler's return, by id, for `$/cancelRequest`.
  var pendingRequests: [RequestID: Responder] = [:]

  /// Above this many unsent bytes the connection stops reading new requests until the
  /// peer reads its replies: memory stays bounded and no reply is ever dropped.
  static let pauseReadingAbove = 8 << 20
  static let resumeReadingBelow = 1 << 20

  init(
    id: Int, loop: EventLoop, input: FileDescriptor, output: FileDescriptor, transport: Transport,
    maxMessageBytes: Int, owner: ConnectionOwner, statistics: RPCStatistics, readBuffer: ReadBuffer
  ) {
    self.id = id
    self.loop = loop
    self.input = input
    self.output = output
    self.transport = transport
    self.owner = owner
    self.statistics = statistics
    self.readBuffer = readBuffer
    self.splitter = FrameSplitter(maxMessageBytes: maxMessageBytes)
    let inputKind = input.kind
    if inputKind == .stream { try? input.setNonBlocking() }
    if output != input && output.kind == .stream { try? output.setNonBlocking() }
    inputMayBlock = inputKind != .stream
  }

  /// Starts reading. A regular file on stdin cannot be polled; it is read in tasks.
  func start() throws(Errno) {
    do {
      inputRegistration = try loop.register(input, events: .readable) { [unowned self] events in
        self.handle(events)
      }
    } catch  where error.code == 1 /* EPERM: not pollable */ {
      loop.execute { [weak self] in self?.readUnpollable() }
    }
  }

  // MARK: Writing

  /// Queues one reply in the peer's framing; `encodeBody` writes its JSON text.
  /// The bytes go out when the loop flushes, once per iteration.
  public func send(encodeBody: (inout [UInt8]) -> Void) {
    guard !isClosed else { return }
    if repliesStart == nil { repliesStart = outBuffer.count }
    (framing ?? .contentLength).appendFrame(to: &outBuffer, scratch: &scratch, encodeBody: encodeBody)
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

  /// Writes what the peer will take now; waits for writability for the rest.
  func flush() {
    flushScheduled = false
    repliesStart = nil
    guard !isClosed else { return }
    while outOffset < outBuffer.count {
      do {
        let offset = outOffset
        let written = try outBuffer.withUnsafeBytes { bytes in
          Result { () throws(Errno) in try output.write(bytes.baseAddress! + offset, count: bytes.count - offset) }
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
    if readPaused {
      readPaused = false
      updateInterest()
      loop.execute { [weak self] in self?.readAvailable() }
    }
    if inputEnded && transport == .socket { close() }
  }

  /// Answers every request still waiting for its handler with `error`: the process is
  /// going away and nobody must wait for an answer that will never come.
  func failPendingRequests(_ error: ResponseError) {
    for responder in pendingRequests.values { responder.fail(error) }
    pendingRequests.removeAll()
  }

  /// Writes everything, waiting if it must. Only for the last words before exit.
  func flushBlocking() {
    guard !isClosed else { return }
    while outOffset < outBuffer.count {
      flush()
      if outOffset < outBuffer.count && !isClosed {
        waitUntilWritable()
      } else {
        break
      }
    }
  }

  // MARK: Closing

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
    if transport == .socket { input.close() }
    outBuffer = []
    repliesStart = nil
    owner?.connectionDidClose(self)
  }

  // MARK: Reading

  private func handle(_ events: IOEvents) {
    if events.contains(.writable) { flush() }
    if isClosed { return }
    if events.contains(.readable) || (!events.isDisjoint(with: [.error, .hangUp]) && !inputEnded) {
      readAvailable()
    }
  }

  private func readAvailable() {
    // A few reads per wake-up, then back to the loop so other peers get their turn.
    var reads = inputMayBlock ? 1 : 4
    while reads > 0 && !isClosed && !inputEnded && !readPaused {
      reads -= 1
      let count: Int
      do {
        count = try input.read(into: readBuffer.pointer, count: readBuffer.capacity)
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

  private func readUnpollable() {
    readAvailable()
    if !isClosed && !inputEnded {
      loop.execute { [weak self] in self?.readUnpollable() }
    }
  }

  private func deliverFrames() {
    while !isClosed, let frame = splitter.next() {
      owner?.connection(self, didReceive: frame)
    }
    if unsentByteCount > Connection.pauseReadingAbove && !readPaused {
      readPaused = true
      updateInterest()
    }
  }

  private func endOfInput() {
    guard !inputEnded else { return }
    inputEnded = true
    if !isClosed, let last = splitter.finishInput() { owner?.connection(self, didReceive: last) }
    if let inputRegistration, input != output {
      loop.deregister(inputRegistration)
      self.inputRegistration = nil
    } else {
      updateInterest()
    }
    owner?.connectionDidReachEndOfInput(self)
    if transport == .socket && !isClosed && unsentByteCount == 0 && !flushScheduled { close() }
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
        loop.execute { [weak self] in self?.flush() }
      }
    } else if let registration = outputRegistration {
      loop.deregister(registration)
      outputRegistration = nil
    }
  }

  private func updateInterest() {
    guard let inputRegistration else { return }
    var events: IOEvents = []
    if !readPaused && !inputEnded { events.insert(.readable) }
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
