import JSON
import Posix

/// Method registry and dispatch: decodes frames into messages, answers what is malformed,
/// routes the rest to the registered methods, and runs batches and `$/cancelRequest`.
/// Knows nothing of what the methods do.
///
/// Must be used on the loop's thread.
public final class Dispatcher {
  /// What the registry knows of a method, for `initialize` and the check against the
  /// contract.
  public struct MethodDescription {
    public let name: String
    public let fields: [ParamField]
    /// Empty for a notification, which is never answered.
    public let errorCodes: [ErrorCode]
    public let isNotification: Bool
  }

  private typealias RunNotification = (borrowing ParamsReader, Connection) -> Void

  public let statistics: RPCStatistics
  private var requestMethods: [String: RegisteredRequest] = [:]
  private var notificationMethods: [String: RunNotification] = [:]
  public private(set) var descriptions: [String: MethodDescription] = [:]
  /// The last method name dispatched and what it named: clients send runs of one
  /// method, and the name was hashed for the tables at each request (twice for an
  /// unknown one). Forgotten whenever a method is registered.
  private var lastMethod: (name: String, run: RegisteredRequest?, isNotification: Bool)?
  /// The same name packed, so the next message naming it is recognised from its bytes,
  /// without a `String` made from them. Kept across registrations:
  /// it only spares making the name.
  /// Not optional: an empty name is as good as none (a message naming "" gets "" either
  /// way), and the optional was copied out for each message.
  private var lastMethodKey = JSONScanner.Key("")
  /// While set, every request is answered with it instead of being run (the service's
  /// refusal after the stdio owner's `shutdown`; one peer's is `Connection.refusal`).
  public var refusal: ResponseError? {
    didSet { isRefusing = refusal != nil }
  }
  /// Whether `refusal` is set, for the check of every request: reading the optional
  /// error itself copied it.
  private var isRefusing = false
  /// An answered responder nothing else holds, for the next request (`Responder.reuse`).
  private var spareResponder: Responder?
  /// The scanner's record arrays, refilled message after message.
  private let scanWorkspace = JSONScanner.Workspace()

  public init(statistics: RPCStatistics = RPCStatistics()) {
    self.statistics = statistics
    // A service registers a few dozen methods: room for them at once, not grown by doubling.
    requestMethods.reserveCapacity(32)
    descriptions.reserveCapacity(32)
    register(CancelRequest.self) { params, connection in
      connection.pendingRequests[params.id]?.cancel()
    }
  }

  /// Inlinable, so the decoding and the call of the handler are compiled for `Method`
  /// where it is registered: no generic code on the hot path.
  @inlinable
  public func register<Method: RequestMethod>(
    _ method: Method.Type, _ handler: @escaping (Request<Method>) throws(ResponseError) -> Void
  ) {
    add(Method.self) { params, responder, connection in
      do throws(ResponseError) {
        let decoded = try Method.Params(from: params)
        try handler(Request(params: consume decoded, reply: Reply(responder: responder), connection: connection))
        return nil
      } catch {
        return error
      }
    }
  }

  /// Decodes a request's params and runs its handler; what it returns answers the request.
  @usableFromInline typealias RunRequest = (borrowing ParamsReader, Responder, Connection) -> ResponseError?

  @usableFromInline func add<Method: RequestMethod>(_ method: Method.Type, run: @escaping RunRequest) {
    lastMethod = nil
    requestMethods[Method.name] = RegisteredRequest(run: run, counter: statistics.counter(for: Method.name))
    descriptions[Method.name] = MethodDescription(
      name: Method.name, fields: Method.Params.fields, errorCodes: Method.errorCodes, isNotification: false)
  }

  /// A notification whose params do not decode is ignored (and logged): there is no one
  /// to tell.
  public func register<Method: NotificationMethod>(
    _ method: Method.Type, _ handler: @escaping (Method.Params, Connection) -> Void
  ) {
    lastMethod = nil
    notificationMethods[Method.name] = { params, connection in
      do throws(ResponseError) {
        handler(try Method.Params(from: params), connection)
      } catch {
        Log.event(
          .debug, "notification.ignored", "ignored a notification",
          [.init("method", Method.name), .init("error", error.message)] + connection.logFields)
      }
    }
    descriptions[Method.name] = MethodDescription(
      name: Method.name, fields: Method.Params.fields, errorCodes: [], isNotification: true)
  }

  /// Every method the dispatcher handles, requests and notifications, sorted.
  public var methods: [String] { descriptions.keys.sorted() }

  // MARK: Frames

  public func handle(_ frame: Frame, from connection: Connection) {
    switch frame {
    case .message(let bytes):
      bytes.withUnsafeBytes { handleMessage($0, from: connection) }
    case .oversized(let size):
      let limit = Int64(connection.maxMessageBytes)
      let data = JSON.object().set("limit", .integer(limit))
      if let size { data.set("size", .integer(size)) }
      sendError(
        ResponseError(
          .invalidRequest, "message exceeds the limit of \(limit) bytes (--max-message-bytes); it was skipped",
          data: data),
        id: nil, to: connection)
    case .badHeader(let reason):
      sendError(ResponseError(.parseError, "bad message header: \(reason)"), id: nil, to: connection)
    }
  }

  /// One request object, the common case, is scanned without building a tree and run
  /// while its bytes are at hand (its params are read from them); batches and anything
  /// else go through jansson.
  private func handleMessage(_ bytes: UnsafeRawBufferPointer, from connection: Connection) {
    do throws(JSONError) {
      if let envelope = try JSONScanner.scanEnvelope(bytes, reusing: scanWorkspace) {
        let message = IncomingMessage(envelope: envelope, in: bytes, knownMethod: lastMethodKey)
        return dispatch(message, connection: connection, batch: nil, slot: 0)
      }
      // Valid JSON, not an object: a batch is counted before its tree is built,
      // which takes many times its size when its elements are tiny.
      let elements = Dispatcher.topLevelArrayCount(bytes)
      if elements > connection.maxBatchElements { return refuseBatch(of: elements, from: connection) }
      handle(try JSON.parse(bytes), from: connection)
    } catch {
      // JSON-RPC says id null here; but a client cannot match that to its call, so
      // the id is given back when the envelope still shows it (see IDRecovery).
      sendError(.parseError(error), id: IDRecovery.id(in: bytes), to: connection)
    }
  }

  /// Handles one parsed message or batch.
  public func handle(_ json: JSON, from connection: Connection) {
    guard json.isArray else {
      dispatch(IncomingMessage(json), connection: connection, batch: nil, slot: 0)
      return
    }
    let elements = json.elements
    if elements.isEmpty {
      sendError(.invalidRequest("empty batch"), id: nil, to: connection)
      return
    }
    if elements.count > connection.maxBatchElements {
      refuseBatch(of: elements.count, from: connection)
      return
    }
    // Messages are not copyable (their params readers may point into a frame), so none
    // is kept in an array: each is decoded from its tree to be counted, then again to
    // be run.
    let answered = elements.reduce(0) { $0 + (IncomingMessage($1).isAnswered ? 1 : 0) }
    let batch = answered > 0 ? BatchReply(connection: connection, count: answered) : nil
    var slot = 0
    for element in elements {
      let message = IncomingMessage(element)
      let isAnswered = message.isAnswered
      if let batch, let id = message.requestID, batch.byteCount > connection.maxUnreadBytes {
        // The reply is sent whole, so it cannot be written as it grows: past the
        // limit, the rest of the batch's requests are answered without being run.
        statistics.requestsTotal += 1
        Responder(id: id, method: "", connection: connection, batch: batch, slot: slot, statistics: statistics)
          .fail(Dispatcher.batchReplyLimit(connection.maxUnreadBytes))
      } else {
        dispatch(message, connection: connection, batch: batch, slot: slot)
      }
      if isAnswered { slot += 1 }
    }
  }

  /// The answer to a request of a batch whose reply already holds `limit` bytes.
  static func batchReplyLimit(_ limit: Int) -> ResponseError {
    ResponseError(
      .invalidRequest,
      "not run: this batch's reply passed the limit of \(limit) bytes (--max-unread-bytes); "
        + "send the request again, in a smaller batch",
      data: JSON.object().set("limit", .integer(Int64(limit))).set("retryable", .bool(true)))
  }

  private func refuseBatch(of elements: Int, from connection: Connection) {
    let limit = connection.maxBatchElements
    let data = JSON.object().set("limit", .integer(Int64(limit))).set("elements", .integer(Int64(elements)))
    sendError(
      ResponseError(
        .invalidRequest,
        "a batch of \(elements) elements exceeds the limit of \(limit) (--max-batch-elements); nothing in it was run",
        data: data),
      id: nil, to: connection)
  }

  /// How many elements the top-level array of a valid JSON text has; 0 when the text
  /// is not an array. A byte scan: no tree is built.
  public static func topLevelArrayCount(_ bytes: UnsafeRawBufferPointer) -> Int {
    var index = 0
    let count = bytes.count
    while index < count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
      index += 1
    }
    guard index < count, bytes[index] == UInt8(ascii: "[") else { return 0 }
    index += 1
    var depth = 1
    var commas = 0
    var sawValue = false
    var inString = false
    while index < count && depth > 0 {
      let byte = bytes[index]
      index += 1
      if inString {
        if byte == UInt8(ascii: "\\") {
          index += 1
        } else if byte == UInt8(ascii: "\"") {
          inString = false
        }
        continue
      }
      switch byte {
      case UInt8(ascii: "\""):
        inString = true
        sawValue = true
      case UInt8(ascii: "["), UInt8(ascii: "{"):
        depth += 1
        sawValue = true
      case UInt8(ascii: "]"), UInt8(ascii: "}"):
        depth -= 1
      case UInt8(ascii: ","):
        if depth == 1 { commas += 1 }
      case 0x20, 0x09, 0x0A, 0x0D:
        break
      default:
        sawValue = true
      }
    }
    return sawValue ? commas + 1 : 0
  }

  // MARK: Dispatch

  private func dispatch(_ message: consuming IncomingMessage, connection: Connection, batch: BatchReply?, slot: Int) {
    switch consume message {
    case .request(let id, let method, let params):
      var responder: Responder
      if batch == nil, let spare = spareResponder {
        spareResponder = nil
        spare.reuse(id: id, method: method, connection: connection)
        responder = spare
      } else {
        responder = Responder(
          id: id, method: method, connection: connection, batch: batch, slot: slot, statistics: statistics)
      }
      defer {
        // Answered, and kept by nobody (no handler's closure, no pending table): the next
        // request may use it.
        if batch == nil, responder.isDone, isKnownUniquelyReferenced(&responder) {
          responder.park()
          spareResponder = responder
        }
      }
      let known = resolve(method)
      guard let run = known.run else {
        statistics.requestsTotal += 1
        if known.isNotification {
          responder.fail(.invalidRequest("\(method) is a notification: send it without an id"))
        } else {
          responder.fail(.methodNotFound(method))
        }
        return
      }
      statistics.countRequest(run.counter)
      if isRefusing || connection.isRefusing, let refusal = refusal ?? connection.refusal {
        responder.fail(refusal)
        return
      }
      if let error = run.run(params, responder, connection) { responder.fail(error) }
      if !responder.isDone {
        if batch == nil { connection.pendingRequests[id] = responder }
        responder.markPending()
      }
    case .notification(let method, let params):
      statistics.notificationsReceived += 1
      if let run = notificationMethods[method] {
        run(params, connection)
      } else if let run = requestMethods[method] {
        self.run(method, params: params, with: run, asNotificationFrom: connection)
      } else {
        Log.event(
          .debug, "notification.ignored", "ignored a notification",
          [.init("method", method), .init("error", "no such method")] + connection.logFields)
      }
    case .response:
      Log.debug("ignored a response from connection \(connection.id)")
    case .invalid(let id, let error):
      let responder = Responder(
        id: id ?? .null, method: "", connection: connection, batch: batch, slot: slot, statistics: statistics)
      responder.fail(error)
    }
  }

  private func resolve(_ method: String) -> (run: RegisteredRequest?, isNotification: Bool) {
    if let lastMethod, lastMethod.name == method { return (lastMethod.run, lastMethod.isNotification) }
    let run = requestMethods[method]
    let isNotification = run == nil && notificationMethods[method] != nil
    lastMethod = (method, run, isNotification)
    lastMethodKey = JSONScanner.Key(method)
    return (run, isNotification)
  }

  /// JSON-RPC 2.0 §4.1: a request without an id is a notification the server runs
  /// and never answers. A fire-and-forget `follow` must not be lost; its errors can
  /// only go to the log.
  private func run(
    _ method: String, params: borrowing ParamsReader, with run: RegisteredRequest,
    asNotificationFrom connection: Connection
  ) {
    statistics.countRequest(run.counter)
    let responder = Responder(notification: method, connection: connection, statistics: statistics)
    if isRefusing || connection.isRefusing, let refusal = refusal ?? connection.refusal {
      return responder.fail(refusal)
    }
    if let error = run.run(params, responder, connection) { responder.fail(error) }
    responder.markPending()
  }

  private func sendError(_ error: ResponseError, id: RequestID?, to connection: Connection) {
    statistics.countError(error.code)
    connection.send { MessageEncoder.error(id: id, error, into: &$0) }
  }
}

/// A registered request method and its count. A class: the dispatcher hands out the
/// last method's entry for each request, and as a struct of two references that cost
/// two retains and two releases.
private final class RegisteredRequest {
  let run: Dispatcher.RunRequest
  let counter: RPCStatistics.MethodCounter

  init(run: @escaping Dispatcher.RunRequest, counter: RPCStatistics.MethodCounter) {
    self.run = run
    self.counter = counter
  }
}
