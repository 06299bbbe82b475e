import CCurl
import EventLoop
import Posix

/// A request to send, through `proxy` ("" for none); its report names `slot`.
struct CurlStart: Sendable {
  let slot: Int
  let request: HTTPRequest
  let timeoutsMs: TimeoutsMs
  let proxy: String
}

/// libcurl's two timeouts for a request, in its milliseconds.
struct TimeoutsMs: Sendable, Equatable {
  var total: Int
  var connect: Int
}

/// What `CurlMulti` tells `HTTPClient`, on whichever thread it runs.
enum CurlReport: Sendable {
  /// The request of `slot` is done. `sent` is false when it never went out (libcurl
  /// refused an option or a handle); `connectionsOpened` is libcurl's count for it.
  case finished(slot: Int, result: Result<HTTPResponse, HTTPError>, sent: Bool, connectionsOpened: Int)
  /// A failure the client's log should say: the curl thread writes no log of its own.
  case trouble(String)
  /// The curl thread let go of the multi handle, which the client asked back.
  case givenBack(MovingMulti)
}

/// A multi handle on its way from one thread to another. Sendable because its owner lets
/// go of it as it posts it and touches it no more: libcurl allows a handle to pass
/// between threads, used by one at a time (libcurl-thread(3)), and so does this.
struct MovingMulti: @unchecked Sendable {
  let multi: CurlMulti
}

/// libcurl's multi interface, driven by the loop it is attached to: libcurl tells it
/// which sockets to watch and when to wake it (its socket and timer callbacks); the loop
/// calls it back with `curl_multi_socket_action`. Connections stay open in the multi
/// handle's cache for the next request. It starts what it is told to and reports each
/// answer to its sink; which request goes when is the client's to decide.
///
/// Attached to one loop at a time, and used only on that loop's thread: `detach` lets go
/// of every descriptor and timer, and `attach` takes them up on another.
final class CurlMulti {
  /// The loop it is attached to, or was last.
  private var loop: EventLoop
  private var sink: ([CurlReport]) -> Void
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
  /// Reports not yet handed to the sink: all of one wake-up go in one batch.
  private var unposted: [CurlReport] = []
  /// Whether a start since the last `write` gave libcurl something to send.
  private var added = false
  /// What a detached handle keeps to take up on the next loop: the sockets it watched and
  /// how long was left of libcurl's deadline, in nanoseconds (the two loops' clocks need
  /// not agree).
  private var detachedSockets: [Int] = []
  private var detachedDeadline: UInt64?
  /// This attachment's: a task queued on a loop cannot be cancelled, and one the last loop
  /// runs after `detach` must not touch the handle (another thread has it).
  private var attachment = Attachment()

  /// Attached to `loop`, reporting to `sink`.
  init(
    loop: EventLoop, sink: @escaping ([CurlReport]) -> Void, maxConnections: Int, maxBodyBytes: Int
  ) {
    self.loop = loop
    self.sink = sink
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

  /// Hands `start`'s request to libcurl; `write` sends it, with the others of its batch.
  func start(_ start: CurlStart) {
    let request = start.request
    guard let transfer = idleTransfers.popLast() ?? newTransfer() else {
      return refused(start.slot, HTTPError(.other, "\(request.summary): curl_easy_init failed"))
    }
    transfer.begin(request, for: start.slot)
    if let error = transfer.configure(timeoutsMs: start.timeoutsMs, proxy: start.proxy) {
      recycle(transfer)
      return refused(start.slot, error)
    }
    let code = nm_multi_add_handle(multi, transfer.handle)
    guard code == CURLM_OK else {
      recycle(transfer)
      return refused(start.slot, HTTPError(.other, "\(request.summary): \(String(cString: nm_multi_strerror(code)))"))
    }
    transfers[transfer.slot] = transfer
    added = true
  }

  /// Has libcurl write the requests started since the last call at once, and reports
  /// what is done.
  func write() {
    if added {
      added = false
      act(on: nm_curl_socket_timeout(), mask: 0)
    }
    postReports()
  }

  /// Lets go of the loop: nothing of the handle stays registered with it, and what it
  /// reported last goes to the sink first.
  func detach() {
    write()
    attachment.isLive = false
    detachedSockets = sockets.indices.filter { sockets[$0].registration != nil }
    for index in detachedSockets {
      loop.deregister(sockets[index].registration!)
      sockets[index].registration = nil
    }
    if let timer { loop.cancel(timer) }
    timer = nil
    timeoutTaskQueued = false
    let now = loop.clock.now.nanoseconds
    detachedDeadline = curlDeadline.map { $0 > now ? $0 - now : 0 }
    curlDeadline = nil
  }

  /// Takes up, on `loop`, what `detach` let go of; reports go to `sink` from now on.
  func attach(to loop: EventLoop, sink: @escaping ([CurlReport]) -> Void) {
    self.loop = loop
    self.sink = sink
    attachment = Attachment()
    timeoutTask = makeTimeoutTask()
    for index in detachedSockets {
      do {
        sockets[index].registration = try loop.register(
          FileDescriptor(rawValue: Int32(index)), events: sockets[index].events, handler: sockets[index].handler!)
      } catch {
        unposted.append(.trouble("HTTP: cannot watch socket \(index): \(error)"))
      }
    }
    detachedSockets = []
    if let left = detachedDeadline {
      detachedDeadline = nil
      let (deadline, later) = loop.clock.now.nanoseconds.addingReportingOverflow(left)
      arm(deadline: later ? UInt64.max : deadline, now: left == 0)
    }
  }

  private func refused(_ slot: Int, _ error: HTTPError) {
    unposted.append(.finished(slot: slot, result: .failure(error), sent: false, connectionsOpened: 0))
  }

  private func postReports() {
    guard !unposted.isEmpty else { return }
    var batch: [CurlReport] = []
    swap(&batch, &unposted)
    sink(batch)
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
    arm(deadline: overflow || later ? UInt64.max : sum, now: delay == 0)
  }

  /// Calls libcurl at `deadline`, or on the loop's next turn (`now`).
  private func arm(deadline: UInt64, now: Bool) {
    curlDeadline = deadline
    if now {
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

  /// `wake(afterMilliseconds: 0)`'s task, made once an attachment. Weak: a queued task
  /// cannot be cancelled when the multi handle goes.
  private lazy var timeoutTask: () -> Void = makeTimeoutTask()

  private func makeTimeoutTask() -> () -> Void {
    { [weak self, attachment] in
      guard attachment.isLive, let self else { return }
      self.timeoutTaskQueued = false
      self.timeoutDue()
    }
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

/// Whether a `CurlMulti` is still attached to the loop that made the closure holding it.
private final class Attachment {
  var isLive = true
}

/// A descriptor libcurl watches through the loop (`registration`), or did.
private struct WatchedSocket {
  var registration: EventLoop.Registration?
  var events: IOEvents = []
  var handler: EventLoop.IOHandler?
}
