import CCurl
import EventLoop
import Posix

/// HTTP over libcurl's multi interface, on the loop or, while many requests are in
/// flight, on a thread of its own (`CurlRunner`): connections stay open in its cache for
/// the next request, and no thread is made per request. What goes out when is decided
/// here, on the loop:
/// requests beyond the connection limit wait in the client's own queue, by
/// `HTTPPriority`; one that waits can be moved (`setPriority`) or given up (`cancel`);
/// an API's hold and the rate limit keep them there.
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
  /// Whether libcurl runs on its own thread now, not on the loop's (`CurlRunner`).
  public var libcurlOnItsThread: Bool { runner.onItsThread }
  /// How many times libcurl moved to its own thread since the client was made.
  public var libcurlMoves: Int { runner.movesToThread }
  /// Called as each request goes out (is handed to libcurl), after any wait: what
  /// was sent when, for tests and tracing.
  public var onStart: ((HTTPRequest) -> Void)?

  /// Where libcurl runs, and the way to it.
  let runner: CurlRunner
  /// Each request handed to libcurl and not yet reported, at the slot its order
  /// names: an array read where a table keyed by a number hashed it twice a request.
  private var sent: [SentRequest?] = []
  private var freeSlots: [Int] = []
  private var inFlightCount = 0
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
  private var lastTimeouts: (timeout: Duration, connect: Duration, ms: TimeoutsMs)?

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
    runner = CurlRunner(loop: loop, maxConnections: self.maxConnections, maxBodyBytes: maxBodyBytes)
    runner.deliver = { [unowned self] reports in self.receive(reports) }
  }

  deinit {
    // In-flight transfers are dropped without their completions (the runner goes with
    // the client): the process is stopping, and the outbox holds every unconfirmed
    // mutation for the next start.
    if let rateTimer { loop.cancel(rateTimer) }
    if let holdTimer { loop.cancel(holdTimer) }
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
    // A connection is free while others wait only inside `receive`, whose
    // completions may send: a new request must not overtake waiting ones it ranks below.
    if inFlightCount < maxConnections && !queue.hasWaiting(atLeast: priority) && !isHeld
      && rate.take(now: loop.clock.now)
    {
      start(request, screen: screen, completion: completion)
      runner.flush(inFlight: inFlightCount)
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
    _ request: HTTPRequest, screen: SentRequest.Screen?, completion: @escaping SentRequest.Completion
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
    let slot = freeSlots.popLast() ?? sent.count
    let entry = SentRequest(request: request, startedAt: loop.clock.now, screen: screen, completion: completion)
    if slot == sent.count { sent.append(entry) } else { sent[slot] = entry }
    runner.start(CurlStart(slot: slot, request: request, timeoutsMs: timeoutsMs(request), proxy: proxy))
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
  private func timeoutsMs(_ request: HTTPRequest) -> TimeoutsMs {
    if let last = lastTimeouts, last.timeout == request.timeout, last.connect == request.connectTimeout {
      return last.ms
    }
    let ms = TimeoutsMs(
      total: Int(request.timeout.roundedUpMilliseconds), connect: Int(request.connectTimeout.roundedUpMilliseconds))
    lastTimeouts = (request.timeout, request.connectTimeout, ms)
    return ms
  }

  // MARK: libcurl's reports

  /// Hands every answer reported to its completion. Each answer's `screen` reads it
  /// first; then the connections freed go to waiting requests of the highest priority,
  /// and libcurl writes those before the completions run: the API works on
  /// the next request while the models read this answer. Only those: a request a
  /// completion sends could outrank any other, and must find the connection free
  /// (`send`), as it always did.
  private func receive(_ reports: [CurlReport]) {
    var finished: [(SentRequest.Completion, Result<HTTPResponse, HTTPError>)] = []
    finished.reserveCapacity(reports.count)
    for report in reports {
      switch report {
      case .trouble(let message): Log.error(message)
      case .givenBack: break  // the runner's own, which it keeps
      case .finished(let slot, let result, let wasSent, let connections):
        guard let entry = sent[slot] else { continue }
        sent[slot] = nil
        freeSlots.append(slot)
        inFlightCount -= 1
        counters.connectionsOpened += connections
        screen(entry, result, wasSent: wasSent)
        finished.append((entry.completion, result))
      }
    }
    startWaiting(atLeast: finished.isEmpty ? .preload : .user)
    for (completion, result) in finished { completion(result) }
    startWaiting()
    if inFlightCount == 0 { runner.becameIdle() }
  }

  /// Counts and logs an answer, and runs its screen (not for a request that never went
  /// out).
  private func screen(_ entry: SentRequest, _ result: Result<HTTPResponse, HTTPError>, wasSent: Bool) {
    guard wasSent else {
      counters.transportErrors += 1
      return
    }
    // Whole nanoseconds to µs, read only when debug logging is on: `Duration`'s
    // division goes through floating point, for every answer.
    var elapsedUs: String { String((loop.clock.now.nanoseconds &- entry.startedAt.nanoseconds) / 1000) }
    switch result {
    case .success(let response):
      counters.responses += 1
      counters.bytesReceived += response.body.count
      Log.debug("HTTP \(entry.request.summary) → \(response.status) in \(elapsedUs) µs")
      if let screen = entry.screen {
        delivering = (entry.request, response)
        screen(result)
        delivering = nil
      }
    case .failure(let error):
      counters.transportErrors += 1
      Log.debug("HTTP \(error.message) after \(elapsedUs) µs")
      entry.screen?(result)
    }
  }

  /// Hands waiting requests of `priority` or higher to libcurl, highest first, while
  /// connections are free.
  private func startWaiting(atLeast priority: HTTPPriority = .preload) {
    defer { runner.flush(inFlight: inFlightCount) }
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
}

/// A request handed to libcurl, with what runs when it is answered.
struct SentRequest {
  typealias Completion = (Result<HTTPResponse, HTTPError>) -> Void
  /// Reads an answer before the next waiting request goes out (`HTTPClient.send`).
  typealias Screen = (Result<HTTPResponse, HTTPError>) -> Void

  let request: HTTPRequest
  let startedAt: LoopInstant
  let screen: Screen?
  let completion: Completion
}
