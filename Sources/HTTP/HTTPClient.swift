import CCurl
import EventLoop
import Posix

/// HTTP over libcurl's multi interface, driven by the event loop: libcurl tells us
/// which sockets to watch and when to wake it (its socket and timer callbacks); the
/// loop calls it back with `curl_multi_socket_action`. No thread per request, and
/// connections stay open in the multi handle's cache for the next request.
///
/// Requests beyond the connection limit wait in the client's own queue, by
/// `HTTPPriority`; one that waits can be moved (`setPriority`) or given up (`cancel`).
///
/// Must be used on the loop's thread. Completions run on the loop, once each, never
/// inside `send` or `cancel`. The first client made opens libcurl (`loadLibcurl`).
public final class HTTPClient {
  public struct Counters: Sendable {
    public var requests = 0
    public var responses = 0
    public var transportErrors = 0
    /// New TCP connections, from libcurl's count per transfer: with keep-alive this
    /// stays near the in-flight limit however many requests go out.
    public var connectionsOpened = 0
    public var bytesReceived = 0
    /// Requests given up before they went out: by `cancel`, or by a hold longer than
    /// they may wait (`HTTPRequest.maxHoldWait`).
    public var cancelled = 0
  }

  public let loop: EventLoop
  /// The most connections open at once (to all hosts); more requests wait in
  /// libcurl's queue.
  public let maxConnections: Int
  public let maxBodyBytes: Int
  /// Which proxy each request goes through, if any (see `ProxySettings`).
  public let proxies: ProxySettings
  /// The variables whose proxy refused a request already: said in the log once each.
  private var proxiesWarnedOf: [String] = []
  public private(set) var counters = Counters()
  /// Transfers handed to libcurl and not yet completed.
  public var inFlight: Int { inFlightCount }
  /// Requests waiting for a free connection.
  public var waiting: Int { queue.count }
  /// Called as each request goes out (is handed to libcurl), after any wait: what
  /// was sent when, for tests and tracing.
  public var onStart: ((HTTPRequest) -> Void)?

  private let multi: UnsafeMutableRawPointer
  /// Each handle's transfer under way, at the slot the handle carries (its
  /// CURLOPT_PRIVATE, set once, when it is made): a table keyed by the handle hashed
  /// it twice a request.
  private var transfers: [Transfer?] = []
  private var freeSlots: [Int] = []
  private var inFlightCount = 0
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
  /// Requests beyond `maxConnections` wait here, not in libcurl: its timeout would
  /// count the wait, its queue of pending transfers is slow when long, and only here
  /// can a waiting request be reordered or given up.
  private var queue = WaitingQueue()
  private var lastTicket: UInt64 = 0
  private var rate = RateLimit(perSecond: 0)
  private var rateTimer: EventLoop.TimerID?
  /// Until then nothing goes out (`hold(until:)`).
  public private(set) var heldUntil: LoopInstant?
  /// What the API said that put the hold on (`hold(until:reason:)`), for `inspect`.
  public private(set) var holdReason: HoldReason?
  private var holdTimer: EventLoop.TimerID?
  /// The answer whose screen runs now: a hold it causes says which API and header.
  private var delivering: (request: HTTPRequest, response: HTTPResponse)?
  var deliveringAnswer: (request: HTTPRequest, response: HTTPResponse)? { delivering }
  private var lastTimeouts: (timeout: Duration, connect: Duration, ms: (total: Int, connect: Int))?

  /// At most this many requests go out a second, after a burst of as many; more wait in
  /// the queue, in priority order. 0: no limit. Whatever a bug or a broken API makes
  /// the models ask for, the API never sees more.
  public var maxRequestsPerSecond: Int {
    get { rate.perSecond }
    set { rate.perSecond = max(0, newValue) }
  }

  public init(
    loop: EventLoop, maxConnections: Int = 16, maxBodyBytes: Int = 32 << 20, proxies: ProxySettings = .process
  ) {
    // Stops here, saying why, where the caller did not ask first (`loadLibcurl`).
    do { try Self.loadLibcurl() } catch { fatalError("\(error)") }
    self.loop = loop
    self.proxies = proxies
    self.maxConnections = max(1, maxConnections)
    self.maxBodyBytes = maxBodyBytes
    guard let multi = nm_multi_init() else { fatalError("curl_multi_init failed") }
    self.multi = multi
    let context = Unmanaged.passUnretained(self).toOpaque()
    _ = nm_multi_setopt_socket_callback(multi) { _, socket, what, context, _ in
      Unmanaged<HTTPClient>.fromOpaque(context!).takeUnretainedValue().watch(socket: socket, what: what)
      return 0
    }
    _ = nm_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
    _ = nm_multi_setopt_timer_callback(multi) { _, timeoutMs, context in
      Unmanaged<HTTPClient>.fromOpaque(context!).takeUnretainedValue().wake(afterMilliseconds: timeoutMs)
      return 0
    }
    _ = nm_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
    _ = nm_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, self.maxConnections)
    _ = nm_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, self.maxConnections)
    _ = nm_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, self.maxConnections)
    _ = nm_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
  }

  deinit {
    // In-flight transfers are dropped without their completions: the process is
    // stopping, and the outbox holds every unconfirmed mutation for the next start.
    for case let transfer? in transfers { nm_multi_remove_handle(multi, transfer.handle) }
    // Each transfer cleans up its handle, before the multi handle goes.
    transfers.removeAll()
    idleTransfers.removeAll()
    for watched in sockets { if let registration = watched.registration { loop.deregister(registration) } }
    if let timer { loop.cancel(timer) }
    if let rateTimer { loop.cancel(rateTimer) }
    if let holdTimer { loop.cancel(holdTimer) }
    nm_multi_cleanup(multi)
  }

  /// Starts `request`, or queues it behind every waiting request of its priority or
  /// higher; `completion` runs once, on the loop, with the whole answer (any status),
  /// the transport error, or `.cancelled`. The ticket names it to `cancel` and
  /// `setPriority` while it waits.
  ///
  /// `screen` reads an answer (or a transport error) before any waiting request takes
  /// the connection it frees, and must not send: what decides whether the next request
  /// may go at all (a rate limit's `hold`) goes there. The completion runs after the
  /// waiting requests went out, so the API already works on the next one.
  @discardableResult
  public func send(
    _ request: HTTPRequest, priority: HTTPPriority = .user,
    screen: ((Result<HTTPResponse, HTTPError>) -> Void)? = nil,
    completion: @escaping (Result<HTTPResponse, HTTPError>) -> Void
  ) -> HTTPTicket {
    counters.requests += 1
    lastTicket += 1
    let ticket = HTTPTicket(raw: lastTicket)
    if let wait = holdRemaining, let most = request.maxHoldWait, wait > most {
      counters.cancelled += 1
      let message = Self.heldTooLong(request, wait)
      loop.execute { completion(.failure(HTTPError(.heldTooLong, message))) }
      return ticket
    }
    // A connection is free while others wait only inside `collectFinished`, whose
    // completions may send: a new request must not overtake waiting ones it ranks below.
    if inFlightCount < maxConnections && !queue.hasWaiting(atLeast: priority) && !isHeld
      && rate.take(now: loop.clock.now)
    {
      start(request, screen: screen, completion: completion)
    } else {
      queue.append(ticket, request, priority, at: loop.clock.now, screen: screen, completion)
      if inFlightCount < maxConnections { waitForRate() }
    }
    return ticket
  }

  /// Gives up a request that is still waiting for a connection: true then, and its
  /// completion runs (on the loop, never inside this call) with `.cancelled`. False
  /// when it has gone out (it finishes as usual) or completed.
  @discardableResult
  public func cancel(_ ticket: HTTPTicket) -> Bool {
    guard let waiting = queue.remove(ticket) else { return false }
    counters.cancelled += 1
    let message = "\(waiting.request.summary): cancelled before it was sent"
    loop.execute { waiting.completion(.failure(HTTPError(.cancelled, message))) }
    return true
  }

  /// Gives up every request still waiting for a connection, as `cancel` does each
  /// (completions on the loop, oldest of the highest priority first); transfers under
  /// way finish as usual. Returns how many were given up.
  @discardableResult
  public func cancelWaiting() -> Int {
    var given: [WaitingQueue.Entry] = []
    while let waiting = queue.popFirst() { given.append(waiting) }
    guard !given.isEmpty else { return 0 }
    counters.cancelled += given.count
    loop.execute {
      for waiting in given {
        waiting.completion(.failure(HTTPError(.cancelled, "\(waiting.request.summary): cancelled before it was sent")))
      }
    }
    return given.count
  }

  /// Moves a waiting request behind the others waiting at `priority`; false when it
  /// has gone out or completed.
  @discardableResult
  public func setPriority(_ ticket: HTTPTicket, _ priority: HTTPPriority) -> Bool {
    queue.move(ticket, to: priority)
  }

  private func start(
    _ request: HTTPRequest, screen: Transfer.Screen?, completion: @escaping Transfer.Completion
  ) {
    var proxy = ""
    switch proxies.route(request.url, carriesCredentials: request.carriesCredentials) {
    case .direct: break
    case .through(let chosen): proxy = chosen.url
    case .refused(let reason):
      counters.transportErrors += 1
      refusedByProxy(request, reason)
      let message = "\(request.summary): not sent: \(reason)"
      loop.execute { completion(.failure(HTTPError(.invalidRequest, message))) }
      return
    }
    guard let transfer = idleTransfers.popLast() ?? newTransfer() else {
      loop.execute { completion(.failure(HTTPError(.other, "\(request.summary): curl_easy_init failed"))) }
      return
    }
    transfer.begin(request, startedAt: loop.clock.now, screen: screen, completion: completion)
    if let error = transfer.configure(timeoutsMs: timeoutsMs(request), proxy: proxy) {
      recycle(transfer)
      counters.transportErrors += 1
      loop.execute { completion(.failure(error)) }
      return
    }
    let code = nm_multi_add_handle(multi, transfer.handle)
    guard code == CURLM_OK else {
      recycle(transfer)
      counters.transportErrors += 1
      let message = "\(request.summary): \(String(cString: nm_multi_strerror(code)))"
      loop.execute { completion(.failure(HTTPError(.other, message))) }
      return
    }
    transfers[transfer.slot] = transfer
    inFlightCount += 1
    onStart?(request)
  }

  /// Says once per proxy variable, at warn, that it keeps requests from going out: each
  /// failure says so too, but a log reader should not have to find it in a reply.
  private func refusedByProxy(_ request: HTTPRequest, _ reason: String) {
    let variable = proxies.route(request.url, carriesCredentials: false).proxyVariable ?? "?"
    guard !proxiesWarnedOf.contains(variable) else { return }
    proxiesWarnedOf.append(variable)
    Log.warn("HTTP \(request.summary): not sent: \(reason)")
  }

  /// `request`'s timeouts in libcurl's milliseconds. Requests nearly always carry the
  /// configuration's two: the last pair is remembered, where turning a `Duration` into
  /// milliseconds is 128-bit arithmetic, twice a request.
  private func timeoutsMs(_ request: HTTPRequest) -> (total: Int, connect: Int) {
    if let last = lastTimeouts, last.timeout == request.timeout, last.connect == request.connectTimeout {
      return last.ms
    }
    let ms = (Int(request.timeout.roundedUpMilliseconds), Int(request.connectTimeout.roundedUpMilliseconds))
    lastTimeouts = (request.timeout, request.connectTimeout, ms)
    return ms
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
      Log.error("HTTP: cannot watch socket \(socket): \(error)")
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
  /// cancelled when the client goes.
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
  }

  private func act(on socket: curl_socket_t, mask: Int32) {
    var running: Int32 = 0
    _ = nm_multi_socket_action(multi, socket, mask, &running)
    collectFinished()
  }

  /// Hands every finished transfer to its completion, after detaching it, so a
  /// completion may start new requests. Each answer's `screen` reads it first; then the
  /// connections freed go to waiting requests of the highest priority, and libcurl
  /// writes those before any completion runs: the API works on the next request while
  /// the models read this answer. Only those: a request a completion sends could outrank
  /// any other, and must find the connection free (`send`), as it always did.
  private func collectFinished() {
    while true {
      let finished = detachFinished()
      let before = inFlightCount
      startWaiting(atLeast: finished.isEmpty ? .preload : .user)
      guard !finished.isEmpty else { return }
      if inFlightCount > before {
        var running: Int32 = 0
        _ = nm_multi_socket_action(multi, nm_curl_socket_timeout(), 0, &running)
      }
      for (completion, result) in finished { completion?(result) }
    }
  }

  /// Takes every finished transfer out of libcurl, counts and logs it, and runs its
  /// screen; what is left to run is each one's completion, in the order they finished.
  private func detachFinished() -> [(Transfer.Completion?, Result<HTTPResponse, HTTPError>)] {
    var finished: [(Transfer.Completion?, Result<HTTPResponse, HTTPError>)] = []
    var remaining: Int32 = 0
    while let message = nm_multi_info_read(multi, &remaining) {
      guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
      let code = nm_msg_result(message)
      let slot = Int(bitPattern: nm_easy_getinfo_pointer(handle, CURLINFO_PRIVATE)) &- 1
      guard transfers.indices.contains(slot), let transfer = transfers[slot], transfer.handle == handle else {
        continue
      }
      transfers[slot] = nil
      inFlightCount -= 1
      let result = transfer.result(code: code)
      counters.connectionsOpened += nm_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS)
      nm_multi_remove_handle(multi, handle)
      // Taken out before the transfer is reset: a completion may start the next request
      // on this very handle.
      let request = transfer.request
      let startedAt = transfer.startedAt
      let screen = transfer.screen
      let completion = transfer.completion
      recycle(transfer)
      // Whole nanoseconds to µs, read only when debug logging is on: `Duration`'s
      // division goes through floating point, for every answer.
      var elapsedUs: String { String((loop.clock.now.nanoseconds &- startedAt.nanoseconds) / 1000) }
      switch result {
      case .success(let response):
        counters.responses += 1
        counters.bytesReceived += response.body.count
        Log.debug("HTTP \(request.summary) → \(response.status) in \(elapsedUs) µs")
        if let screen {
          delivering = (request, response)
          screen(result)
          delivering = nil
        }
      case .failure(let error):
        counters.transportErrors += 1
        Log.debug("HTTP \(error.message) after \(elapsedUs) µs")
        screen?(result)
      }
      finished.append((completion, result))
    }
    return finished
  }

  /// Hands waiting requests of `priority` or higher to libcurl, highest first, while
  /// connections are free.
  private func startWaiting(atLeast priority: HTTPPriority = .preload) {
    while inFlightCount < maxConnections, queue.hasWaiting(atLeast: priority), !isHeld {
      guard rate.take(now: loop.clock.now) else { return waitForRate() }
      guard let waiting = queue.popFirst() else { return }
      start(waiting.request, screen: waiting.screen, completion: waiting.completion)
    }
  }

  /// Nothing is sent before `instant` (an API said it takes no requests until then):
  /// requests wait in the queue, by priority, and go out when it comes. A later hold
  /// extends it; an earlier one changes nothing.
  public func hold(until instant: LoopInstant, reason: HoldReason? = nil) {
    guard instant > loop.clock.now, heldUntil.map({ instant > $0 }) ?? true else { return }
    if heldUntil == nil { logHold(for: instant - loop.clock.now) } else { Log.debug("HTTP: the hold was extended") }
    heldUntil = instant
    holdReason = reason
    giveUpWaiting(longerThan: instant - loop.clock.now)
    if let holdTimer { loop.cancel(holdTimer) }
    let api = delivering.map { Self.origin($0.request.url) } ?? ""
    holdTimer = loop.schedule(after: instant - loop.clock.now) { [weak self] in
      self?.holdTimer = nil
      self?.release([.init("api", api)])
    }
  }

  /// Gives up the waiting requests that may not wait `wait` (`HTTPRequest.maxHoldWait`):
  /// their completions run on the loop with `.heldTooLong`, saying how long was left.
  private func giveUpWaiting(longerThan wait: Duration) {
    let given = queue.removeAll { entry in entry.request.maxHoldWait.map { wait > $0 } ?? false }
    guard !given.isEmpty else { return }
    counters.cancelled += given.count
    Log.event(
      .warn, "ratelimit.giveUp", "requests that may not wait that long for the API's pause were given up, not sent",
      [
        .init("requests", given.count), .init("first", given[0].request.summary),
        .init("ms", Int((wait / .milliseconds(1)).rounded(.up))),
      ])
    loop.execute {
      for waiting in given {
        waiting.completion(.failure(HTTPError(.heldTooLong, Self.heldTooLong(waiting.request, wait))))
      }
    }
  }

  static func heldTooLong(_ request: HTTPRequest, _ wait: Duration) -> String {
    let seconds = Int((wait / .seconds(1)).rounded(.up))
    let most = Int(((request.maxHoldWait ?? .zero) / .milliseconds(1)).rounded(.down))
    return "\(request.summary): not sent: the API's rate limit holds requests for another \(seconds) s, "
      + "longer than this one may wait (\(most) ms)"
  }

  /// Ends the hold now: it was another account's or environment's (`why` says which),
  /// so what waits, and what comes, goes out.
  public func endHold(_ why: String) {
    guard heldUntil != nil else { return }
    if let holdTimer { loop.cancel(holdTimer) }
    holdTimer = nil
    release([.init("why", why)])
  }

  private func release(_ fields: [Log.Field]) {
    heldUntil = nil
    holdReason = nil
    Log.event(
      .info, "ratelimit.end", "the API's rate limit ended: held requests go out",
      fields + [.init("waiting", queue.count)])
    startWaiting()
  }

  /// How long requests still wait for a hold; nil when none is on.
  public var holdRemaining: Duration? {
    guard let heldUntil else { return nil }
    let left = heldUntil - loop.clock.now
    return left > .zero ? left : nil
  }

  /// The first `limit` requests waiting for a connection, a token or a hold, oldest first.
  public func waitingRequests(limit: Int) -> [WaitingRequest] {
    queue.oldest(limit).map { WaitingRequest(summary: $0.request.summary, priority: $0.priority, since: $0.queuedAt) }
  }

  /// Whether a hold is on (its timer may not have fired yet at its very end: the
  /// timer, not the clock, ends it, so waiting requests go out together).
  private var isHeld: Bool { heldUntil != nil }

  /// Requests wait for the rate limit, not for a connection: wake when a token is due.
  private func waitForRate() {
    guard rateTimer == nil else { return }
    let delay = rate.delayUntilNext(now: loop.clock.now)
    rateTimer = loop.schedule(after: delay) { [weak self] in
      self?.rateTimer = nil
      self?.startWaiting()
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
      Log.error("HTTP: libcurl refused an option: \(String(cString: nm_easy_strerror(code)))")
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
    if idleTransfers.count < 4 * maxConnections {
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
