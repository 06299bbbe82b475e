import EventLoop
import Glibc
import Posix

/// A real HTTP/1.1 server on 127.0.0.1, driven by the same event loop as the code
/// under test, so tests of the HTTP client and the REST backend run real sockets and
/// real libcurl without threads. Each request is answered by `handler`, which can
/// also inject faults: a delay, a dropped connection, or no answer at all.
public final class LoopbackHTTPServer {
  public struct Request: Sendable {
    public var method: String
    /// The path without the query.
    public var path: String
    /// The raw query string, still percent-encoded; "" when there is none.
    public var query: String
    /// Names in lower case.
    public var headers: [String: String]
    public var body: String
    /// Which accepted connection carried it (0-based).
    public var connection: Int
  }

  public indirect enum Action {
    case respond(status: Int, headers: [(String, String)] = [], body: String = "")
    case after(milliseconds: UInt64, Action)
    /// Close the connection without an answer.
    case drop
    /// Never answer; keep the connection open.
    case hang
  }

  public let loop: EventLoop
  public let port: UInt16
  public var handler: (Request) -> Action = { _ in .respond(status: 200, body: "{}") }
  public private(set) var requests: [Request] = []
  public private(set) var connectionsAccepted = 0
  public var baseURL: String { "http://127.0.0.1:\(port)" }

  private let listener: FileDescriptor
  private var listenerRegistration: EventLoop.Registration?
  private var stopped = false
  private var clients: [Int32: Client] = [:]

  private final class Client {
    let fd: FileDescriptor
    let number: Int
    var registration: EventLoop.Registration?
    var buffer: [UInt8] = []
    init(fd: FileDescriptor, number: Int) {
      self.fd = fd
      self.number = number
    }
  }

  public init(loop: EventLoop) throws {
    self.loop = loop
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { throw Errno.current("socket") }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(fd, pointer, length) == 0 && listen(fd, 128) == 0 && getsockname(fd, pointer, &length) == 0
      }
    }
    guard bound else {
      let error = Errno.current("bind")
      Glibc.close(fd)
      throw error
    }
    port = UInt16(bigEndian: address.sin_port)
    listener = FileDescriptor(rawValue: fd)
    listenerRegistration = try loop.register(listener, events: .readable) { [unowned self] _ in self.acceptAll() }
  }

  deinit { stop() }

  /// Closes the listener and every connection, once: a test may stop the server
  /// before its deinit does.
  public func stop() {
    guard !stopped else { return }
    stopped = true
    if let listenerRegistration { loop.deregister(listenerRegistration) }
    listenerRegistration = nil
    for (_, client) in clients { close(client) }
    // Closed once only: by a second close the number may be another descriptor's, such
    // as a socket libcurl has just opened on another test's thread, which then fails
    // to register (epoll_ctl(ADD): EBADF) and its request hangs.
    listener.close()
  }

  /// Requests whose path is `path` (any method, any query).

  private func acceptAll() {
    while true {
      let fd = Glibc.accept(listener.rawValue, nil, nil)
      guard fd >= 0 else { return }
      try? FileDescriptor(rawValue: fd).setNonBlocking()
      let client = Client(fd: FileDescriptor(rawValue: fd), number: connectionsAccepted)
      connectionsAccepted += 1
      clients[fd] = client
      client.registration = try? loop.register(client.fd, events: .readable) { [unowned self] _ in
        self.read(client)
      }
    }
  }

  private func read(_ client: Client) {
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
      let count = chunk.withUnsafeMutableBytes { Glibc.read(client.fd.rawValue, $0.baseAddress, $0.count) }
      if count > 0 {
        client.buffer.append(contentsOf: chunk[0..<count])
        continue
      }
      if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
        close(client)
        return
      }
      break
    }
    while let request = nextRequest(client) {
      requests.append(request)
      perform(handler(request), on: client)
    }
  }

  /// Cuts one complete request (headers and a Content-Length body) off the buffer.
  private func nextRequest(_ client: Client) -> Request? {
    let end: [UInt8] = [13, 10, 13, 10]
    guard
      let headerEnd = client.buffer.indices.dropLast(3).first(where: { client.buffer[$0..<$0 + 4].elementsEqual(end) })
    else { return nil }
    let head = String(decoding: client.buffer[..<headerEnd], as: UTF8.self)
    var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
    let requestLine = lines.removeFirst().split(separator: " ")
    var headers: [String: String] = [:]
    for line in lines {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop(while: { $0 == " " }))
    }
    let bodyLength = Int(headers["content-length"] ?? "0") ?? 0
    let bodyStart = headerEnd + 4
    guard client.buffer.count >= bodyStart + bodyLength else { return nil }
    let body = String(decoding: client.buffer[bodyStart..<bodyStart + bodyLength], as: UTF8.self)
    client.buffer.removeFirst(bodyStart + bodyLength)
    let target = requestLine.count > 1 ? String(requestLine[1]) : "/"
    let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    return Request(
      method: requestLine.first.map(String.init) ?? "", path: String(parts[0]),
      query: parts.count > 1 ? String(parts[1]) : "", headers: headers, body: body, connection: client.number)
  }

  private func perform(_ action: Action, on client: Client) {
    switch action {
    case .respond(let status, let headers, let body):
      var text = "HTTP/1.1 \(status) Status\r\nContent-Length: \(body.utf8.count)\r\n"
      for (name, value) in headers { text += "\(name): \(value)\r\n" }
      text += "\r\n" + body
      guard clients[client.fd.rawValue] === client else { return }
      try? client.fd.writeAll(text)
    case .after(let milliseconds, let next):
      loop.schedule(after: .milliseconds(milliseconds)) { [weak self] in self?.perform(next, on: client) }
    case .drop:
      close(client)
    case .hang:
      break
    }
  }

  private func close(_ client: Client) {
    guard clients[client.fd.rawValue] === client else { return }
    if let registration = client.registration { loop.deregister(registration) }
    clients[client.fd.rawValue] = nil
    client.fd.close()
  }
}
