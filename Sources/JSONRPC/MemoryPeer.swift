import EventLoop
import Posix

/// A peer in the same process (`RPCServer.attach(_:)`): what it writes, the connection
/// reads; what the connection writes, it keeps. No descriptor and no system call, for
/// the fuzzer, which serves tens of thousands of connections a minute and spent a
/// quarter of its time in a socketpair's syscalls (Fuzz/README.md).
///
/// It behaves as a socket peer that reads every reply at once: a read with nothing
/// written yet would block, a read after `close()` is the end of input, and a write
/// to a peer that closed fails with EPIPE.
///
/// Must be used on the loop's thread.
public final class MemoryPeer {
  /// Every byte the connection wrote to this peer.
  public private(set) var received: [UInt8] = []
  /// How many writes brought them: each is a socket peer's wake-up.
  public private(set) var writeCount = 0
  /// The connection closed its end.
  public private(set) var closedByServer = false
  /// This peer closed its end: the connection reads the end of input.
  public private(set) var isClosed = false

  private var unread: [UInt8] = []
  private var unreadOffset = 0
  private weak var connection: Connection?
  private var loop: EventLoop?

  /// The user the connection believes is at this end, as a socket's SO_PEERCRED
  /// tells it: tests put another user there.
  public let peerUser: UserID?

  public init(peerUser: UserID? = nil) { self.peerUser = peerUser }

  /// Hands `bytes` to the connection; it reads them in the loop's next iteration.
  public func write(_ bytes: UnsafeRawBufferPointer) {
    precondition(!isClosed, "write after close")
    unread.append(contentsOf: bytes)
    becameReadable()
  }

  /// Closes this end: once it has read what was written, the connection sees the
  /// end of its input.
  public func close() {
    guard !isClosed else { return }
    isClosed = true
    becameReadable()
  }

  var hasUnread: Bool { unreadOffset < unread.count }

  func attach(_ connection: Connection, loop: EventLoop) {
    self.connection = connection
    self.loop = loop
    if hasUnread || isClosed { becameReadable() }
  }

  /// A socket's `read`: bytes, 0 at the end, EAGAIN when nothing is there yet.
  func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(Errno) -> Int {
    guard hasUnread else {
      if isClosed { return 0 }
      throw Errno(Errno.wouldBlock, call: "read")
    }
    let taken = min(count, unread.count - unreadOffset)
    unread.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + unreadOffset, byteCount: taken) }
    unreadOffset += taken
    if unreadOffset == unread.count {
      unread.removeAll(keepingCapacity: true)
      unreadOffset = 0
    }
    return taken
  }

  /// A socket's `write`, to a peer that takes everything until it closes.
  func take(_ bytes: UnsafeRawPointer, count: Int) throws(Errno) -> Int {
    guard !isClosed else { throw Errno(Errno.brokenPipe, call: "write") }
    received.append(contentsOf: UnsafeRawBufferPointer(start: bytes, count: count))
    writeCount += 1
    return count
  }

  func connectionClosed() {
    closedByServer = true
  }

  /// What epoll reports for a socket, as a task: readable (or hung up).
  private func becameReadable() {
    loop?.execute(readable)
  }

  /// Made once: a closure per write was an allocation per chunk the fuzzer writes.
  private lazy var readable: () -> Void = { [weak self] in
    guard let self, let connection = self.connection else { return }
    connection.memoryPeerReadable()
  }
}
