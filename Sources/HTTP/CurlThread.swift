import EventLoop
import Posix

/// The thread libcurl runs on, with a loop of its own: it writes requests and reads
/// answers while the models' loop reads the answers before and works on what they
/// mean, so an API at many requests in flight is not bound by one core. Orders go down
/// and reports come up through a mailbox each; nothing else is shared.
final class CurlThread {
  let orders: Mailbox<CurlOrder>
  let reports: Mailbox<CurlReport>
  private let thread: OSThread

  init(maxConnections: Int, maxBodyBytes: Int) throws(Errno) {
    let orders = try Mailbox<CurlOrder>()
    let reports = try Mailbox<CurlReport>()
    self.orders = orders
    self.reports = reports
    let loop = try EventLoop()
    let multi = CurlMulti(loop: loop, reports: reports, maxConnections: maxConnections, maxBodyBytes: maxBodyBytes)
    // Unowned: the loop keeps the handler, and the thread's body keeps both.
    _ = try loop.register(orders.bell.fd, events: .readable) { [unowned multi] _ in multi.serve(orders.take()) }
    thread = try OSThread.start(name: "netmodel curl") {
      // The multi handle is cleaned up here, on its own thread, when the loop stops.
      withExtendedLifetime(multi) {
        // The loop's only failures are misuse (a bad descriptor): nothing would answer
        // the requests under way, so the process stops, saying why.
        do { try loop.run() } catch { fatalError("the curl thread's loop failed: \(error)") }
      }
    }
  }

  /// Stops the thread, dropping what is under way, and waits for it.
  func stop() {
    orders.post(.stop)
    thread.join()
  }
}
