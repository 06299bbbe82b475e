import JSON
import JSONRPC
import Posix

/// A blocking, one-connection JSON-RPC client over the Unix socket, for `call` and
/// `watch`: scripts want an answer and an exit code, not an event loop.
struct RPCClient {
  struct Failure: Error, CustomStringConvertible {
    let description: String
    /// The deadline passed (`--timeout`), as opposed to any other failure.
    var timedOut = false
  }

  /// When `reply(to:)` and `receive()` give up waiting (`--timeout`); nil: never.
  var deadline: ContinuousClock.Instant?
  private let fd: FileDescriptor
  private var splitter = FrameSplitter(maxMessageBytes: 1 << 30, framing: .newlineDelimited)
  private var nextID: Int64 = 1
  private var held: [JSON] = []

  init(socketPath: String) throws(Failure) {
    do {
      fd = try UnixSocket.connect(path: socketPath)
    } catch {
      throw Failure(
        description: "cannot connect to \(socketPath): \(error) — is `netmodel serve --socket` running?")
    }
    // Before a byte is sent: a socket put there by another user would receive the
    // request, tokens included. The server does the same check the other way.
    let me = UnixSocket.currentUID()
    let peer: UserID
    do {
      peer = try UnixSocket.peerUID(fd)
    } catch {
      fd.close()
      throw Failure(description: "cannot tell who serves \(socketPath): \(error); nothing was sent")
    }
    guard peer == me else {
      fd.close()
      throw Failure(
        description: "refusing to talk to \(socketPath): the process listening there runs as uid \(peer), "
          + "not as this user (uid \(me)); nothing was sent. Check who owns the socket's folder")
    }
  }

  func close() { fd.close() }

  /// Tells the server to stop working on request `id` (`$/cancelRequest`), if it listens.
  func cancel(_ id: Int64) {
    var bytes: [UInt8] = []
    MessageEncoder.Notification(method: "$/cancelRequest").encode(into: &bytes) { params in
      params.append(contentsOf: Array(#"{"id":"#.utf8))
      appendDecimal(id, to: &params)
      params.append(UInt8(ascii: "}"))
    }
    bytes.append(0x0A)
    _ = bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try fd.writeAll(buffer) } }
  }

  /// Sends a notification: no answer comes.
  func notify(method: String) throws(Failure) {
    var bytes: [UInt8] = []
    MessageEncoder.Notification(method: method).encode(into: &bytes) { $0.append(contentsOf: Array("null".utf8)) }
    bytes.append(0x0A)
    let written = bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try fd.writeAll(buffer) } }
    if case .failure(let error) = written { throw Failure(description: "cannot send: \(error)") }
  }

  /// Sends a request and returns its id.
  mutating func send(method: String, params: JSON?) throws(Failure) -> Int64 {
    let id = nextID
    nextID += 1
    var bytes: [UInt8] = []
    MessageEncoder.request(id: .integer(id), method: method, params: params, into: &bytes)
    bytes.append(0x0A)
    let written = bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try fd.writeAll(buffer) } }
    if case .failure(let error) = written { throw Failure(description: "cannot send: \(error)") }
    return id
  }

  /// The next message from the server; nil when it closed the connection.
  mutating func receive() throws(Failure) -> JSON? {
    if !held.isEmpty { return held.removeFirst() }
    return try receiveFromSocket()
  }

  private mutating func receiveFromSocket() throws(Failure) -> JSON? {
    while true {
      if let message = try bufferedMessage() { return message }
      try waitForBytes()
      guard try readSocket() else { return nil }
    }
  }

  /// The socket, for `top`, which waits on it and on the keyboard at once.
  var socket: FileDescriptor { fd }

  /// The next message already read, without reading the socket.
  mutating func bufferedMessage() throws(Failure) -> JSON? {
    if !held.isEmpty { return held.removeFirst() }
    while let frame = splitter.next() {
      guard case .message(let bytes) = frame else { continue }
      do {
        return try JSON.parse(Array(bytes))
      } catch {
        throw Failure(description: "the server sent something that is not JSON: \(error)")
      }
    }
    return nil
  }

  /// Reads once from the socket (blocking until it has bytes); false when the server
  /// closed the connection.
  mutating func readSocket() throws(Failure) -> Bool {
    var chunk = [UInt8](repeating: 0, count: 65536)
    let count = chunk.withUnsafeMutableBytes { buffer in
      Result { () throws(Errno) in try fd.read(into: buffer.baseAddress!, count: buffer.count) }
    }
    switch count {
    case .success(0): return false
    case .success(let n):
      splitter.append(Array(chunk[0..<n]))
      return true
    case .failure(let error): throw Failure(description: "cannot read: \(error)")
    }
  }

  /// Until the socket has bytes, or throws once the deadline passed. A stopped
  /// server still accepts connections (the kernel does), so a read would never end.
  private func waitForBytes() throws(Failure) {
    guard let deadline else { return }
    if !fd.waitUntilReadable(timeout: ContinuousClock.now.duration(to: deadline)) {
      throw Self.noAnswerInTime
    }
  }

  /// The reply to request `id` (as `reply(to:)` takes it) if it comes within `slice`;
  /// nil when it has not come yet. Throws once the deadline passed, as `reply` does.
  mutating func reply(to id: Int64, within slice: Duration) throws(Failure) -> JSON? {
    let end = ContinuousClock.now + slice
    while true {
      while let frame = splitter.next() {
        guard case .message(let bytes) = frame else { continue }
        let message: JSON
        do {
          message = try JSON.parse(Array(bytes))
        } catch {
          throw Failure(description: "the server sent something that is not JSON: \(error)")
        }
        if message["id"]?.integer == id || Self.isUnmatchedError(message) { return message }
        if message["id"] == nil { held.append(message) }
      }
      let now = ContinuousClock.now
      if let deadline, now >= deadline { throw Self.noAnswerInTime }
      if now >= end { return nil }
      let until = deadline.map { min($0, end) } ?? end
      if !fd.waitUntilReadable(timeout: now.duration(to: until)) { continue }
      guard try readSocket() else { throw Failure(description: "the server closed the connection before answering") }
    }
  }

  static let noAnswerInTime = Failure(
    description: "no answer in time (--timeout); is the server stopped or busy?", timedOut: true)

  /// Waits for the reply to request `id`, or an error the server could not tie to a
  /// request (`isUnmatchedError`), which answers it. Notifications met on the way are
  /// kept for `receive`: the server writes a turn's state changes before its replies.
  mutating func reply(to id: Int64) throws(Failure) -> JSON {
    while let message = try receiveFromSocket() {
      if message["id"]?.integer == id || Self.isUnmatchedError(message) { return message }
      if message["id"] == nil { held.append(message) }
    }
    throw Failure(description: "the server closed the connection before answering")
  }
}

extension RPCClient {
  /// An error reply with id null: the server could not read the request's id (it
  /// passed `--max-message-bytes`, or did not parse), so it skipped the request. Each
  /// command sends one request and waits for it, so this is its answer: waiting on
  /// would never end.
  static func isUnmatchedError(_ message: JSON) -> Bool {
    guard message["error"] != nil, message["method"] == nil else { return false }
    return message["id"]?.isNull ?? true
  }
}

/// Reads params from the command line, as HTTPie does: one JSON object or array, or
/// `key=value` pairs (always strings: `id=123` is the id "123") and `key:=json` pairs
/// (`await:=true`, `maxAgeMs:=0`).
func paramsFromArguments(_ arguments: [String]) throws(RPCClient.Failure) -> JSON? {
  guard let first = arguments.first else { return nil }
  if arguments.count == 1, first.hasPrefix("{") || first.hasPrefix("[") {
    do {
      return try JSON.parse(first)
    } catch {
      throw RPCClient.Failure(description: "params are not valid JSON: \(error)")
    }
  }
  let object = JSON.object()
  for argument in arguments {
    guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
      throw RPCClient.Failure(description: "expected key=value, key:=json or one JSON object, got \(argument)")
    }
    var key = String(argument[..<equals])
    let text = String(argument[argument.index(after: equals)...])
    if key.hasSuffix(":") {
      key.removeLast()
      do {
        object.set(key, try JSON.parse(text))
      } catch {
        throw RPCClient.Failure(description: "\(key):= needs JSON, got \(text): \(error)")
      }
    } else {
      object.set(key, .string(text))
    }
  }
  return object
}
