import EventLoop
import Posix

/// Where libcurl runs: on the models' loop while few requests are in flight, on a thread
/// of its own (`CurlThread`) while many are. A lone request's answer then costs no
/// wake-up of another thread, each way, and a burst's answers no longer wait while the
/// loop does libcurl's work too (bench/README.md, "libcurl on its own thread, built").
/// The multi handle moves between the two only whole, with every transfer under way
/// (`CurlMulti.detach`, `attach`): it goes when `threadFrom` are in flight, and comes
/// back once none has been for `quietBeforeReturn`.
///
/// Used on the models' loop. `deliver` gets every answer there, never inside `start`
/// or `flush`.
final class CurlRunner {
  /// From this many requests in flight, libcurl moves to its thread: below it the loop
  /// alone is as fast or faster, and at 1 and 2 clearly so (bench/README.md).
  static let threadFrom = 8
  /// How long none must be in flight before libcurl comes back to the loop: a burst's
  /// gaps do not move it to and fro.
  var quietBeforeReturn: Duration = .milliseconds(20)
  /// What gets the answers (and libcurl's failures to say), on the loop.
  var deliver: ([CurlReport]) -> Void = { _ in }
  /// How many times libcurl moved to its thread since start (`stats` shows it).
  private(set) var movesToThread = 0

  private enum Home {
    case loop(CurlMulti)
    case thread
    /// Asked back (`CurlOrder.giveBack`): requests wait in `held` until it comes.
    case returning
  }

  private let loop: EventLoop
  private var home: Home
  private var thread: CurlThread?
  private var threadRefused = false
  private var reportsRegistration: EventLoop.Registration?
  private var pending: [CurlStart] = []
  private var held: [CurlStart] = []
  /// Reports of the multi handle while it runs on the loop, delivered by a task: never
  /// inside the call to libcurl that made them.
  private var loopReports: [CurlReport] = []
  private var loopReportsQueued = false
  private var quietTimer: EventLoop.TimerID?

  init(loop: EventLoop, maxConnections: Int, maxBodyBytes: Int) {
    self.loop = loop
    home = .returning  // until the handle is made, just below: its sink is this object's
    home = .loop(CurlMulti(loop: loop, sink: loopSink, maxConnections: maxConnections, maxBodyBytes: maxBodyBytes))
  }

  deinit {
    // A multi handle on the thread is dropped there; one here, with this object.
    thread?.stop()
    if let reportsRegistration { loop.deregister(reportsRegistration) }
    if let quietTimer { loop.cancel(quietTimer) }
  }

  /// Whether libcurl runs on its own thread now (or is on its way back).
  var onItsThread: Bool {
    if case .loop = home { return false }
    return true
  }

  /// Whether it was asked back and has not come yet: requests sent now are held.
  var isComingBack: Bool {
    if case .returning = home { return true }
    return false
  }

  /// Takes `start` on; `flush` sends it, with the others started since the last flush.
  func start(_ start: CurlStart) {
    pending.append(start)
  }

  /// Sends what `start` took on; `inFlight` counts those too.
  func flush(inFlight: Int) {
    guard !pending.isEmpty else { return }
    var starts: [CurlStart] = []
    swap(&starts, &pending)
    if let quietTimer {
      loop.cancel(quietTimer)
      self.quietTimer = nil
    }
    if case .loop(let multi) = home, inFlight >= Self.threadFrom, let thread = startedThread() {
      multi.detach()
      thread.orders.post(.adopt(MovingMulti(multi: multi)))
      home = .thread
      movesToThread += 1
      Log.debug("HTTP: libcurl moves to its own thread (\(inFlight) requests in flight)")
    }
    switch home {
    case .loop(let multi):
      for start in starts { multi.start(start) }
      multi.write()
    case .thread:
      thread!.orders.post(contentsOf: starts.map { .start($0) })
    case .returning:
      held += starts
    }
  }

  /// None is in flight any more: libcurl comes back to the loop if it stays so.
  func becameIdle() {
    guard case .thread = home, quietTimer == nil else { return }
    quietTimer = loop.schedule(after: quietBeforeReturn) { [weak self] in
      guard let self else { return }
      self.quietTimer = nil
      // Nothing was sent since: `flush` cancels the timer.
      guard case .thread = self.home else { return }
      self.home = .returning
      self.thread!.orders.post(.giveBack)
    }
  }

  /// The thread, started on first use. nil when it cannot be: libcurl stays on the
  /// loop, as fast as it is with few in flight, and the log says why once.
  private func startedThread() -> CurlThread? {
    if let thread { return thread }
    guard !threadRefused else { return nil }
    do {
      let thread = try CurlThread()
      let reports = thread.reports
      reportsRegistration = try loop.register(reports.bell.fd, events: .readable) { [unowned self] _ in
        self.received(reports.take())
      }
      self.thread = thread
      return thread
    } catch {
      threadRefused = true
      Log.warn("HTTP: libcurl stays on the loop's thread: its own cannot start (\(error))")
      return nil
    }
  }

  /// The reports of the multi handle on the loop: delivered by a task, so that no
  /// completion runs inside `flush` (and so inside `HTTPClient.send`).
  private lazy var loopSink: ([CurlReport]) -> Void = { [unowned self] batch in
    self.loopReports += batch
    guard !self.loopReportsQueued else { return }
    self.loopReportsQueued = true
    self.loop.execute { [weak self] in
      guard let self else { return }
      self.loopReportsQueued = false
      var reports: [CurlReport] = []
      swap(&reports, &self.loopReports)
      self.deliver(reports)
    }
  }

  /// What the thread reported: the multi handle, when it comes back, is attached to the
  /// loop and sends what was held meanwhile; the rest is the client's.
  private func received(_ reports: [CurlReport]) {
    var forClient: [CurlReport] = []
    forClient.reserveCapacity(reports.count)
    for report in reports {
      guard case .givenBack(let moving) = report else {
        forClient.append(report)
        continue
      }
      moving.multi.attach(to: loop, sink: loopSink)
      home = .loop(moving.multi)
      Log.debug("HTTP: libcurl is back on the loop's thread")
      var starts: [CurlStart] = []
      swap(&starts, &held)
      for start in starts { moving.multi.start(start) }
      moving.multi.write()
    }
    if !forClient.isEmpty { deliver(forClient) }
  }
}
