import EventLoop
import Posix

/// A listening Unix socket on the loop. Accepts every waiting peer whose uid is ours
/// (SO_PEERCRED) and hands it on; peers of another user are refused.
final class Listener {
  let path: String
  private let fd: FileDescriptor
  private let loop: EventLoop
  private var registration: EventLoop.Registration?
  private let uid = UnixSocket.currentUID()

  init(path: String, loop: EventLoop, accepted: @escaping (FileDescriptor) -> Void) throws(UnixSocket.ListenError) {
    self.path = path
    self.loop = loop
    fd = try UnixSocket.listen(path: path)
    do {
      registration = try loop.register(fd, events: .readable) { [unowned self] _ in
        self.acceptAll(accepted)
      }
    } catch {
      fd.close()
      throw .system(error, path: path)
    }
  }

  private func acceptAll(_ accepted: (FileDescriptor) -> Void) {
    while true {
      let peer: FileDescriptor?
      do {
        peer = try UnixSocket.accept(fd)
      } catch {
        // EMFILE and friends: keep the listener; the peer waits in the backlog.
        Log.warn("accept on \(path) failed: \(error)")
        return
      }
      guard let peer else { return }
      guard let peerUID = try? UnixSocket.peerUID(peer), peerUID == uid else {
        Log.warn("refused a connection on \(path) from another user")
        peer.close()
        continue
      }
      accepted(peer)
    }
  }

  /// Stops listening and removes the socket file.
  func close() {
    if let registration { loop.deregister(registration) }
    registration = nil
    fd.close()
    unlinkSocket(path)
  }
}
