import EventLoop
import JSON
import JSONRPC
import Posix

/// A peer connected to an `RPCServer` through a socketpair, driven by running the
/// server's loop one iteration at a time: no threads, no sleeps.
public final class InProcessPeer {
  public let server: RPCServer
  public let connection: Connection
  private let fd: FileDescriptor
  private var splitter: FrameSplitter
  private var received: [[UInt8]] = []
  public private(set) var peerClosed = false

  /// A socket peer unless `transport` says stdio (the process that started the
  /// server); `peerUser` is who the server believes it is (SO_PEERCRED's answer for a
  /// socket accepted from the listener).
  public init(
    server: RPCServer, framing: Framing = .newlineDelimited, transport: Connection.Transport = .socket,
    peerUser: UserID? = nil
  ) throws {
    self.server = server
    let (serverEnd, peerEnd) = try FileDescriptor.socketPair()
    connection = try server.attach(input: serverEnd, output: serverEnd, transport: transport, peerUser: peerUser)
    fd = peerEnd
    splitter = FrameSplitter(maxMessageBytes: 1 << 30, framing: framing)
  }

  private var fdClosed = false

  deinit { closeWrite() }

  /// Writes raw bytes as the peer.
  public func write(_ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
      let start = offset
      let result = bytes.withUnsafeBytes { buffer in
        Result { () throws(Errno) in try fd.write(buffer.baseAddress! + start, count: buffer.count - start) }
      }
      switch result {
      case .success(let written): offset += written
      case .failure(let error) where error.isWouldBlock: try server.loop.runOnce(wait: false)
      case .failure(let error): throw error
      }
    }
  }

  public func write(_ text: String) throws { try write(Array(text.utf8)) }

  /// Sends one message in the given framing.
  public func send(_ json: String, framing: Framing = .newlineDelimited) throws {
    switch framing {
    case .newlineDelimited: try write(json + "\n")
    case .contentLength: try write("Content-Length: \(json.utf8.count)\r\n\r\n" + json)
    }
  }

  /// Closes the peer's end: the server sees end of input.
  public func closeWrite() {
    guard !fdClosed else { return }
    fdClosed = true
    fd.close()
  }

  /// Runs the loop until `count` messages arrived or `iterations` passed; returns them.
  public func receive(_ count: Int = 1, iterations: Int = 200) throws -> [JSON] {
    var result: [JSON] = []
    var left = iterations
    while result.count < count && left > 0 {
      left -= 1
      try server.loop.runOnce(wait: false)
      readAvailable()
      while result.count < count, let frame = splitter.next() {
        if case .message(let bytes) = frame { result.append(try JSON.parse(Array(bytes))) }
      }
    }
    return result
  }

  /// Runs the loop a few times and returns whatever arrived (possibly nothing).
  public func drain(iterations: Int = 5) throws -> [JSON] {
    var result: [JSON] = []
    for _ in 0..<iterations {
      try server.loop.runOnce(wait: false)
      readAvailable()
    }
    while let frame = splitter.next() {
      if case .message(let bytes) = frame { result.append(try JSON.parse(Array(bytes))) }
    }
    return result
  }

  /// The raw bytes the server wrote since the last call.
  public func rawOutput(iterations: Int = 5) throws -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    for _ in 0..<iterations {
      try server.loop.runOnce(wait: false)
      while !fdClosed {
        let n = chunk.withUnsafeMutableBytes { try? fd.read(into: $0.baseAddress!, count: $0.count) }
        guard let n, n > 0 else {
          if n == 0 { peerClosed = true }
          break
        }
        bytes.append(contentsOf: chunk[0..<n])
      }
    }
    return bytes
  }

  private func readAvailable() {
    guard !fdClosed else { return }
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = chunk.withUnsafeMutableBytes { try? fd.read(into: $0.baseAddress!, count: $0.count) }
      guard let n, n > 0 else {
        if n == 0 { peerClosed = true }
        return
      }
      chunk.withUnsafeBytes { splitter.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }
  }
}
