import EventLoop
import Posix

/// A listening Unix socket on the loop. Accepts every waiting peer whose uid is ours
/// (SO_PEERCRED) and hands it on with that uid; peers of another user are refused.
///
/// When accept() fails (EMFILE: no descriptor left, and the like) the peer stays in the
/// backlog and the socket stays readable: polling it again at once would spin. The
/// listener stops polling instead, until a connection closes (`descriptorFreed`) or a
/// back-off delay passes (0.1 s, doubling up to 1 s), and says so once per episode: from
/// the first failure until an accept finds the backlog empty with a descriptor to spare.
final class Listener {
  let path: String
  private let fd: FileDescriptor
  private let loop: EventLoop
  private var registration: EventLoop.Registration?
  private let uid = UnixSocket.currentUID()
  /// Not polling after a failed accept; the timer that polls again.
  private var backingOff: EventLoop.TimerID?
  /// accept() failures in this episode (logged once).
  private var failures = 0
  private var backOff = Listener.firstBackOff
  /// False for a socket a service manager passed: its path is the manager's, which
  /// keeps listening after we exit and starts us again on the next connection.
  private let ownsPath: Bool

  static let firstBackOff = Duration.milliseconds(100)
  static let maxBackOff = Duration.seconds(1)

  convenience init(path: String, loop: EventLoop, accepted: @escaping (FileDescriptor, UserID) -> Void)
    throws(UnixSocket.ListenError)
  {
    try self.init(fd: try UnixSocket.listen(path: path), path: path, ownsPath: true, loop: loop, accepted: accepted)
  }

  init(
    fd: FileDescriptor, path: String, ownsPath: Bool, loop: EventLoop,
    accepted: @escaping (FileDescriptor, UserID) -> Void
  ) throws(UnixSocket.ListenError) {
    self.path = path
    self.loop = loop
    self.fd = fd
    self.ownsPath = ownsPath
    do {
      registration = try loop.register(fd, events: .readable) { [unowned self] _ in
        self.acceptAll(accepted)
      }
    } catch {
      fd.close()
      throw .system(error, path: path)
    }
  }

  private func acceptAll(_ accepted: (FileDescriptor, UserID) -> Void) {
    while true {
      let peer: FileDescriptor?
      do {
        peer = try UnixSocket.accept(fd)
      } catch {
        failed(error)
        return
      }
      guard let peer else {
        // Nobody waits, and a descriptor was free (accept takes one before it looks
        // at the backlog): the episode is over.
        if failures > 0 {
          Log.info("accepting connections on \(path) normally again (after \(failures) failed attempts)")
          failures = 0
          backOff = Listener.firstBackOff
        }
        return
      }
      guard let peerUID = try? UnixSocket.peerUID(peer), peerUID == uid else {
        Log.warn("refused a connection on \(path) from another user")
        peer.close()
        continue
      }
      accepted(peer, peerUID)
    }
  }

  /// EMFILE and friends: the peer waits in the backlog; stop polling for a while.
  private func failed(_ error: Errno) {
    failures += 1
    if failures == 1 {
      Log.warn(
        "accept on \(path) failed: \(error); new connections wait until a connection closes "
          + "(tried again every \(Listener.maxBackOff.roundedUpMilliseconds) ms at most; said once until descriptors are spare again)"
      )
    } else {
      Log.debug("accept on \(path) failed again (\(failures)): \(error)")
    }
    guard let registration, backingOff == nil else { return }
    try? loop.modify(registration, events: [])
    let delay = backOff
    backOff = min(backOff * 2, Listener.maxBackOff)
    backingOff = loop.schedule(after: delay) { [weak self] in
      self?.backingOff = nil
      self?.pollAgain()
    }
  }

  /// A descriptor was freed: try again now rather than after the back-off.
  func descriptorFreed() {
    guard let timer = backingOff else { return }
    loop.cancel(timer)
    backingOff = nil
    pollAgain()
  }

  private func pollAgain() {
    guard let registration else { return }
    try? loop.modify(registration, events: .readable)
  }

  /// Stops listening and removes the socket file.
  func close() {
    if let backingOff { loop.cancel(backingOff) }
    backingOff = nil
    if let registration { loop.deregister(registration) }
    registration = nil
    fd.close()
    if ownsPath { unlinkSocket(path) }
  }
}
