import CSystem
import Glibc

/// A thread of the process's own, which its owner joins. It starts with every signal
/// blocked: signals are the main loop's, read from its signalfd, and a thread that let
/// one through would take SIGTERM's default action instead of a clean stop.
public struct OSThread: Sendable {
  private let handle: pthread_t

  /// Runs `body` on a new thread called `name` (at most 15 bytes, as `top -H` and gdb
  /// show it). `body` is handed over: the thread is the only one to touch what it holds.
  /// The corresponding C function is `pthread_create`.
  public static func start(name: String, _ body: sending @escaping () -> Void) throws(Errno) -> OSThread {
    let context = Unmanaged.passRetained(ThreadBody(name: String(name.utf8.prefix(15))!, body)).toOpaque()
    var all = sigset_t()
    var previous = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_SETMASK, &all, &previous)
    var handle = pthread_t()
    let code = pthread_create(
      &handle, nil,
      { context in
        let thread = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
        // Named by itself before anything runs: named by its maker, it could be seen
        // (and read its own name) as its maker's for a moment.
        _ = nm_thread_setname(pthread_self(), thread.name)
        thread.body()
        return nil
      }, context)
    pthread_sigmask(SIG_SETMASK, &previous, nil)
    guard code == 0 else {
      Unmanaged<ThreadBody>.fromOpaque(context).release()
      throw Errno(code, call: "pthread_create")
    }
    return OSThread(handle: handle)
  }

  /// Waits for the thread's body to return. The corresponding C function is `pthread_join`.
  public func join() {
    _ = pthread_join(handle, nil)
  }
}

private final class ThreadBody {
  let name: String
  let body: () -> Void
  init(name: String, _ body: @escaping () -> Void) {
    self.name = name
    self.body = body
  }
}
