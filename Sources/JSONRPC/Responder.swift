import JSON
import Posix

/// Answers one request exactly once: now, later (after a backend call), or with
/// `-32800` when the peer cancels it. Answers after that are ignored.
///
/// Must be used on the loop's thread.
public final class Responder {
  public private(set) var id: RequestID
  public private(set) var method: String
  public private(set) var isDone = false
  /// Called when the peer cancels the request, so the handler can stop its work.
  public var onCancel: (() -> Void)?

  /// Strong: an answer that comes after the peer is gone finds the connection closed
  /// and is dropped. A weak reference here gave every connection a side table, which
  /// made each retain and release of it ~10 times as costly. The cycle through
  /// `pendingRequests` ends when the request is answered or the connection closes.
  /// Nil only while parked for reuse (see `park`).
  private var connection: Connection?
  private var batch: BatchReply?
  private var slot: Int
  private let statistics: RPCStatistics
  /// A request sent as a notification: it runs, but nothing is written back.
  private let isNotification: Bool
  /// Counted in the connection's pending requests until answered.
  private var countedAsPending = false

  init(id: RequestID, method: String, connection: Connection, batch: BatchReply?, slot: Int, statistics: RPCStatistics)
  {
    self.id = id
    self.method = method
    self.connection = connection
    self.batch = batch
    self.slot = slot
    self.statistics = statistics
    self.isNotification = false
  }

  /// Makes an answered responder that nothing else holds answer another request of a
  /// batchless peer: most requests are answered before their handler returns, and
  /// one object need not be allocated, initialised and freed for each (see
  /// `Dispatcher.dispatch`).
  func reuse(id: RequestID, method: String, connection: Connection) {
    assert(isDone && !isNotification && !countedAsPending)
    // A handler that set it after answering must not hear of this request's cancel.
    onCancel = nil
    self.id = id
    self.method = method
    self.connection = connection
    self.batch = nil
    self.slot = 0
    isDone = false
  }

  /// Lets go of the connection while the responder waits to be reused: the dispatcher
  /// keeping it would otherwise keep the connection, which keeps the dispatcher.
  func park() {
    connection = nil
  }

  /// For a request method called as a notification: answers go to the log only.
  init(notification method: String, connection: Connection, statistics: RPCStatistics) {
    self.id = .null
    self.method = method
    self.connection = connection
    self.batch = nil
    self.slot = 0
    self.statistics = statistics
    self.isNotification = true
  }

  public func succeed(_ result: JSON) {
    succeed { result.encode(into: &$0) }
  }

  /// Succeeds with `result`, written with its envelope in one go when it fits on the
  /// stack (`EncodableResult.encode(into:)`).
  public func succeed<Result: EncodableResult>(_ result: Result) {
    guard finish() else { return }
    let id = self.id
    deliver { MessageEncoder.result(id: id, result, into: &$0) }
  }

  /// Succeeds with a result whose JSON text `encodeResult` writes straight into the
  /// output.
  public func succeed(encodingResult encodeResult: (inout [UInt8]) -> Void) {
    guard finish() else { return }
    let id = self.id
    deliver { MessageEncoder.result(id: id, into: &$0, encodeResult: encodeResult) }
  }

  public func fail(_ error: ResponseError) {
    guard finish() else { return }
    statistics.countError(error.code)
    if isNotification {
      if let connection {
        connection.logFailedNotification(method: method, error: error.message)
      } else {
        Log.event(
          .warn, "notification.failed", "a notification failed (there is nobody to answer)",
          [.init("method", method), .init("error", error.message)])
      }
      return
    }
    let id = self.id
    deliver { MessageEncoder.error(id: id, error, into: &$0) }
  }

  /// Answers `-32800` and tells the handler.
  func cancel() {
    guard !isDone else { return }
    let handler = onCancel
    fail(ResponseError(.requestCancelled, "request cancelled", data: JSON.object().set("method", .string(method))))
    handler?()
  }

  /// The peer is gone: nobody will read an answer, so the work may stop.
  func connectionClosed() {
    guard !isDone else { return }
    isDone = true
    uncountPending()
    let handler = onCancel
    onCancel = nil
    handler?()
  }

  /// The handler returned without answering: the request counts against the peer's
  /// `maxPendingRequests` until it is answered.
  func markPending() {
    guard !isDone, !countedAsPending, let connection else { return }
    countedAsPending = true
    connection.requestBecamePending()
  }

  private func uncountPending() {
    guard countedAsPending else { return }
    countedAsPending = false
    connection?.pendingRequestFinished()
  }

  private func finish() -> Bool {
    if isDone { return false }
    isDone = true
    onCancel = nil
    defer { uncountPending() }
    // Only a request left pending is in the table (the dispatcher adds it when its
    // handler returns unanswered): an answer given at once skips the lookup.
    if countedAsPending, batch == nil, let connection, connection.pendingRequests[id] === self {
      connection.pendingRequests[id] = nil
    }
    return true
  }

  /// Inlined into each answer: compiled on its own, it was specialised for each
  /// answer's closure with the captured id and error passed as copies.
  @inline(__always)
  private func deliver(_ encode: (inout [UInt8]) -> Void) {
    guard let connection, !isNotification else { return }
    if let batch {
      batch.fill(slot: slot, encode: encode)
    } else {
      connection.send(encodeBody: encode)
    }
  }
}

/// Collects the answers to one batch and sends them as one array once all are in.
/// The bytes it holds count against the peer's limit (`Connection.heldReplyBytes`).
final class BatchReply {
  /// Strong, as in `Responder`.
  private let connection: Connection
  private var parts: [[UInt8]?]
  private var remaining: Int
  /// Bytes of the answers collected so far.
  private(set) var byteCount = 0

  init(connection: Connection, count: Int) {
    self.connection = connection
    parts = Array(repeating: nil, count: count)
    remaining = count
  }

  func fill(slot: Int, encode: (inout [UInt8]) -> Void) {
    remaining -= 1
    guard !connection.isClosed else {
      // Nobody will read it: keep nothing.
      parts = []
      return
    }
    var bytes: [UInt8] = []
    encode(&bytes)
    byteCount += bytes.count + 1
    connection.heldReplyBytes += bytes.count + 1
    parts[slot] = bytes
    if remaining == 0 { send(on: connection) }
  }

  private func send(on connection: Connection) {
    var parts = self.parts
    self.parts = []
    connection.heldReplyBytes -= byteCount
    connection.send { buffer in
      buffer.reserveCapacity(buffer.count + byteCount + 2)
      buffer.append(UInt8(ascii: "["))
      var first = true
      for index in parts.indices {
        guard let part = parts[index] else { continue }
        if !first { buffer.append(UInt8(ascii: ",")) }
        first = false
        buffer.append(contentsOf: part)
        parts[index] = nil
      }
      buffer.append(UInt8(ascii: "]"))
    }
  }
}
