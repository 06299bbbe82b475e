import CCurl
import EventLoop
import Posix

/// What `HTTPClient` asks of the curl thread.
enum CurlOrder: Sendable {
  /// Send `request`, through `proxy` ("" for none); its report names `slot`.
  case start(slot: Int, request: HTTPRequest, timeoutsMs: TimeoutsMs, proxy: String)
  /// Stop the thread: transfers under way are dropped, unreported.
  case stop
}

/// libcurl's two timeouts for a request, in its milliseconds.
struct TimeoutsMs: Sendable, Equatable {
  var total: Int
  var connect: Int
}

/// What the curl thread tells `HTTPClient`.
enum CurlReport: Sendable {
  /// The request of `slot` is done. `sent` is false when it never went out (libcurl
  /// refused an option or a handle); `connectionsOpened` is libcurl's count for it.
  case finished(slot: Int, result: Result<HTTPResponse, HTTPError>, sent: Bool, connectionsOpened: Int)
  /// A failure the client's log should say: the curl thread writes no log of its own.
  case trouble(String)
}

/// libcurl's multi interface, driven by the curl thread's loop: libcurl tells it which
/// sockets to watch and when to wake it (its socket and timer callbacks); the loop calls
/// it back with `curl_multi_socket_action`. Connections stay open in the multi handle's
/// cache for the next request. It starts what it is ordered to and reports each
/// answer; which request goes when is the client's to decide.
///
/// Made on one thread and then used only on the curl thread's.
final class CurlMulti {
  private let loop: EventLoop
  private let reports: Mailbox<CurlReport>
  private let maxBodyBytes: Int
  private let maxIdle: Int
  private let multi: UnsafeMutableRawPointer
  /// Each handle's transfer under way, at the slot the handle carries (its
  /// CURLOPT_PRIVATE, set once, when it is made): a table keyed by the handle hashed
  /// it twice a request.
  private var transfers: [Transfer?] = []
  private var freeSlots: [Int] = []
  /// Handles kept with their transfer objects and options for the next requests.
  private var idleTransfers: [Transfer] = []
  /// The sockets libcurl asked to watch, at their descriptor's number (descriptors are
  /// small and reused): libcurl adds and removes a kept-alive connection's socket about
  /// once a request, where a table keyed by the socket hashed it three times.
  private var sockets: [WatchedSocket] = []
  /// libcurl's timer (see `wake`): when it fires, which may be before libcurl's deadline.
  private var timer: EventLoop.TimerID?
  private var timerDeadline: UInt64 = 0
  /// When libcurl last asked to be called with CURL_SOCKET_TIMEOUT, in the loop clock's
  /// nanoseconds; nil once it was, or when it asks for nothing.
  private var curlDeadline: UInt64?
  private var timeoutTaskQueued = false
  /// Reports not yet posted: all of one wake-up go in one post.
  private var unposted: [CurlReport] = []

  init(loop: EventLoop, reports: Mailbox<CurlReport>, maxConnections: Int, maxBodyBytes: Int) {
    self.loop = loop
    self.reports = reports
    self.maxBodyBytes = maxBodyBytes
    maxIdle = 4 * maxConnections
    guard let multi = nm_multi_init() else { fatalError("curl_multi_init failed") }
    self.multi = multi
    let context = Unmanaged.passUnretained(self).toOpaque()
    _ = nm_multi_setopt_socket_callback(multi) { _, socket, what, context, _ in
      Unmanaged<CurlMulti>.fromOpaque(context!).takeUnretainedValue().watch(socket: socket, what: what)
      return 0
    }
    _ = nm_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
    _ = nm_multi_setopt_timer_callback(multi) { _, timeoutMs, context in
      Unmanaged<CurlMulti>.fromOpaque(context!).takeUnretainedValue().wake(afterMilliseconds: timeoutMs)
      return 0
    }
    _ = nm_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
    _ = nm_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxConnections)
    _ = nm_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnections)
    _ = nm_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxConnections)
    _ = nm_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
  }

  deinit {
    for case let transfer? in transfers { nm_multi_remove_handle(multi, transfer.handle) }
    // Each transfer cleans up its handle, before the multi handle goes.
    transfers.removeAll()
    idleTransfers.removeAll()
    for watched in sockets { if let registration = watched.registration { loop.deregister(registration) } }
    if let timer { loop.cancel(timer) }
    nm_multi_cleanup(multi)
  }

  /// Carries out `orders`, oldest first, and has libcurl write the new requests at once.
  func serve(_ orders: [CurlOrder]) {
    var added = false
    for order in orders {
      switch order {
      case .start(let slot, let request, let timeoutsMs, let proxy):
        added = start(slot, request, timeoutsMs, proxy) || added
      case .stop:
        loop.stop()
        return
      }
    }
    if added { act(on: nm_curl_socket_timeout(), mask: 0) }
    postReports()
  }

  private func start(_ slot: Int, _ request: HTTPRequest, _ timeoutsMs: TimeoutsMs, _ proxy: String) -> Bool {
    guard let transfer = idleTransfers.popLast() ?? newTransfer() else {
      refused(slot, HTTPError(.other, "\(request.summary): curl_easy_init failed"))
      return false
    }
    transfer.begin(request, for: slot)
    if let error = transfer.configure(timeoutsMs: timeoutsMs, proxy: proxy) {
      recycle(transfer)
      refused(slot, error)
      return false
    }
    let code = nm_multi_add_handle(multi, transfer.handle)
    guard code == CURLM_OK else {
      recycle(transfer)
      refused(slot, HTTPError(.other, "\(request.summary): \(String(cString: nm_multi_strerror(code)))"))
      return false
    }
    transfers[transfer.slot] = transfer
    return true
  }

  private func refused(_ slot: Int, _ error: HTTPError) {
    unposted.append(.finished(slot: slot, result: .failure(error), sent: false, connectionsOpened: 0))
  }

  private func postReports() {
    guard !unposted.isEmpty else { return }
    reports.post(contentsOf: unposted)
    unposted.removeAll(keepingCapacity: true)
  }

  // MARK: libcurl's callbacks

  /// CURLMOPT_SOCKETFUNCTION: watch `socket` for what libcurl waits on, or stop.
  private func watch(socket: curl_socket_t, what: Int32) {
    guard socket >= 0 else { return }
    let index = Int(socket)
    if what == CURL_POLL_REMOVE {
      guard index < sockets.count, let registration = sockets[index].registration else { return }
      sockets[index].registration = nil
      loop.deregister(registration)
      return
    }
    var events: IOEvents = []
    if what & CURL_POLL_IN != 0 { events.insert(.readable) }
    if what & CURL_POLL_OUT != 0 { events.insert(.writable) }
    if index >= sockets.count {
      sockets.append(contentsOf: repeatElement(WatchedSocket(), count: index + 1 - sockets.count))
    }
    do {
      if let registration = sockets[index].registration {
        // libcurl often repeats what it already asked for: no system call then.
        guard sockets[index].events != events else { return }
        try loop.modify(registration, events: events)
        sockets[index].events = events
      } else {
        // The handler is stored once and never written back: a closure that passed
        // through a generic function (`??`, a tuple in a dictionary) comes back wrapped
        // in reabstraction thunks, and storing that would add two to the chain every
        // time the socket is watched again, and every wake-up would walk the chain.
        if sockets[index].handler == nil { sockets[index].handler = makeSocketHandler(socket) }
        sockets[index].registration = try loop.register(
          FileDescriptor(rawValue: socket), events: events, handler: sockets[index].handler!)
        sockets[index].events = events
      }
    } catch {
      unposted.append(.trouble("HTTP: cannot watch socket \(socket): \(error)"))
    }
  }

  /// What the loop calls when `socket` is ready: made once per descriptor number and
  /// kept with it, since libcurl registers a kept-alive socket again for each request.
  private func makeSocketHandler(_ socket: curl_socket_t) -> EventLoop.IOHandler {
    { [unowned self] ready in self.socketReady(socket, ready) }
  }

  /// CURLMOPT_TIMERFUNCTION: libcurl wants `socket_action` with CURL_SOCKET_TIMEOUT
  /// after `delay` (-1: no timer). It must not be called from inside this callback,
  /// so even zero goes through the loop.
  ///
  /// libcurl asks about twice a request: zero when a transfer is added, then its earliest
  /// deadline again (the oldest transfer's timeout, which only moves later). Zero is a
  /// task on the loop's next turn, and a later deadline keeps the timer that is due
  /// first (it fires early, finds the deadline ahead, and waits on for it) rather than
  /// a timer cancelled and scheduled each time. The deadline
  /// is in whole nanoseconds, where a `Duration` multiplies in 128 bits.
  private func wake(afterMilliseconds delay: Int) {
    guard delay >= 0 else {
      curlDeadline = nil
      if let timer { loop.cancel(timer) }
      timer = nil
      return
    }
    let (nanoseconds, overflow) = UInt64(delay).multipliedReportingOverflow(by: 1_000_000)
    let (sum, later) = loop.clock.now.nanoseconds.addingReportingOverflow(nanoseconds)
    let deadline = overflow || later ? UInt64.max : sum
    curlDeadline = deadline
    if delay == 0 {
      if !timeoutTaskQueued {
        timeoutTaskQueued = true
        loop.execute(timeoutTask)
      }
      return
    }
    if timer != nil, timerDeadline <= deadline { return }
    if let timer { loop.cancel(timer) }
    timerDeadline = deadline
    timer = loop.scheduleRepeating(at: LoopInstant(nanoseconds: deadline), timerBody)
  }

  /// Calls libcurl when its deadline has come (not before: it may have moved it later).
  private func timeoutDue() {
    guard let deadline = curlDeadline, deadline <= loop.clock.now.nanoseconds else { return }
    curlDeadline = nil
    act(on: nm_curl_socket_timeout(), mask: 0)
    postReports()
  }

  /// What libcurl's timer runs, made once (a closure made per `wake` was an allocation
  /// and a free): it serves whatever deadline libcurl holds when it fires, also one set
  /// while it ran, and stops when there is none.
  private lazy var timerBody: EventLoop.TimerBody = { [unowned self] in
    self.timeoutDue()
    guard let next = self.curlDeadline else {
      self.timer = nil
      return nil
    }
    let now = self.loop.clock.now
    self.timerDeadline = max(next, now.nanoseconds)
    // Through `LoopInstant`'s difference: `.nanoseconds(_:)` traps beyond `Int64`, and
    // an overflowing delay is a deadline of `UInt64.max`.
    return LoopInstant(nanoseconds: self.timerDeadline) - now
  }

  /// `wake(afterMilliseconds: 0)`'s task, made once. Weak: a queued task cannot be
  /// cancelled when the multi handle goes.
  private lazy var timeoutTask: () -> Void = { [weak self] in
    guard let self else { return }
    self.timeoutTaskQueued = false
    self.timeoutDue()
  }

  private func socketReady(_ socket: curl_socket_t, _ events: IOEvents) {
    var mask: Int32 = 0
    if events.contains(.readable) { mask |= CURL_CSELECT_IN }
    if events.contains(.writable) { mask |= CURL_CSELECT_OUT }
    if !events.isDisjoint(with: [.error, .hangUp]) { mask |= CURL_CSELECT_ERR }
    act(on: socket, mask: mask)
    postReports()
  }

  private func act(on socket: curl_socket_t, mask: Int32) {
    var running: Int32 = 0
    _ = nm_multi_socket_action(multi, socket, mask, &running)
    collectFinished()
  }

  /// Takes every finished transfer out of libcurl and reports its answer; its handle
  /// goes back to the pool.
  private func collectFinished() {
    var remaining: Int32 = 0
    while let message = nm_multi_info_read(multi, &remaining) {
      guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
      let code = nm_msg_result(message)
      let slot = Int(bitPattern: nm_easy_getinfo_pointer(handle, CURLINFO_PRIVATE)) &- 1
      guard transfers.indices.contains(slot), let transfer = transfers[slot], transfer.handle == handle else {
        continue
      }
      transfers[slot] = nil
      let result = transfer.result(code: code)
      let connections = nm_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS)
      nm_multi_remove_handle(multi, handle)
      unposted.append(
        .finished(slot: transfer.order, result: result, sent: true, connectionsOpened: connections))
      recycle(transfer)
    }
  }

  /// A handle with the options every request shares (see `Transfer.prepare`), in its
  /// transfer object.
  private func newTransfer() -> Transfer? {
    guard let handle = nm_easy_init() else { return nil }
    let slot: Int
    if let free = freeSlots.popLast() {
      slot = free
    } else {
      slot = transfers.count
      transfers.append(nil)
    }
    let transfer = Transfer(
      handle: handle, errorBuffer: Transfer.makeErrorBuffer(), slot: slot, maxBodyBytes: maxBodyBytes)
    // The slot + 1, so that no handle carries a null pointer.
    var code = nm_easy_setopt_pointer(handle, CURLOPT_PRIVATE, UnsafeMutableRawPointer(bitPattern: slot + 1))
    if code == CURLE_OK { code = transfer.prepare() ?? CURLE_OK }
    guard code == CURLE_OK else {
      unposted.append(.trouble("HTTP: libcurl refused an option: \(String(cString: nm_easy_strerror(code)))"))
      freeSlots.append(slot)
      return nil  // its handle is cleaned up with it
    }
    return transfer
  }

  /// Kept as configured, with its error buffer and options: the next request sets
  /// every option a request sets that differs. Beyond the pool's size it goes, with its
  /// handle.
  private func recycle(_ transfer: Transfer) {
    transfer.end()
    if idleTransfers.count < maxIdle {
      idleTransfers.append(transfer)
    } else {
      freeSlots.append(transfer.slot)
    }
  }
}

/// A descriptor libcurl watches through the loop (`registration`), or did.
private struct WatchedSocket {
  var registration: EventLoop.Registration?
  var events: IOEvents = []
  var handler: EventLoop.IOHandler?
}
