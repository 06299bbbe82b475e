import EventLoop
import Posix

/// What `HTTPClient` asks of the curl thread.
enum CurlOrder: Sendable {
  /// Take the multi handle on: from now on it runs on this thread.
  case adopt(MovingMulti)
  case start(CurlStart)
  /// Hand the multi handle back (`CurlReport.givenBack`).
  case giveBack
  /// Stop the thread: transfers under way are dropped, unreported.
  case stop
}

/// The thread libcurl runs on while many requests are in flight, with a loop of its own:
/// it writes requests and reads answers while the models' loop works on what they mean,
/// so an API at many requests in flight is not bound by one core. Orders go down and
/// reports come up through a mailbox each; the multi handle itself moves with them
/// (`CurlOrder.adopt`, `CurlReport.givenBack`), and nothing else is shared.
final class CurlThread {
  let orders: Mailbox<CurlOrder>
  let reports: Mailbox<CurlReport>
  private let thread: OSThread

  init() throws(Errno) {
    let orders = try Mailbox<CurlOrder>()
    let reports = try Mailbox<CurlReport>()
    self.orders = orders
    self.reports = reports
    let host = CurlHost(loop: try EventLoop(), reports: reports)
    // Unowned: the loop keeps the handler, and the thread's body keeps both.
    _ = try host.loop.register(orders.bell.fd, events: .readable) { [unowned host] _ in host.serve(orders.take()) }
    thread = try OSThread.start(name: "netmodel curl") {
      // A multi handle the thread holds is cleaned up here, on its thread, when the
      // loop stops.
      withExtendedLifetime(host) {
        // The loop's only failures are misuse (a bad descriptor): nothing would answer
        // the requests under way, so the process stops, saying why.
        do { try host.loop.run() } catch { fatalError("the curl thread's loop failed: \(error)") }
      }
    }
  }

  /// Stops the thread, dropping what is under way, and waits for it.
  func stop() {
    orders.post(.stop)
    thread.join()
  }
}

/// The curl thread's side: its loop, and the multi handle while the thread has it.
private final class CurlHost {
  let loop: EventLoop
  private let reports: Mailbox<CurlReport>
  private var multi: CurlMulti?

  init(loop: EventLoop, reports: Mailbox<CurlReport>) {
    self.loop = loop
    self.reports = reports
  }

  func serve(_ orders: [CurlOrder]) {
    for order in orders {
      switch order {
      case .adopt(let moving):
        multi = moving.multi
        moving.multi.attach(to: loop) { [reports] batch in reports.post(contentsOf: batch) }
      case .start(let start):
        guard let multi else {
          // The client orders only while the thread has the handle; were it ever not
          // so, the request fails, saying why, rather than waiting for ever.
          let error = HTTPError(.other, "\(start.request.summary): not sent: libcurl was not on its thread")
          reports.post(.finished(slot: start.slot, result: .failure(error), sent: false, connectionsOpened: 0))
          continue
        }
        multi.start(start)
      case .giveBack:
        guard let multi else { continue }
        multi.detach()
        self.multi = nil
        reports.post(.givenBack(MovingMulti(multi: multi)))
      case .stop:
        loop.stop()
        return
      }
    }
    multi?.write()
  }
}
