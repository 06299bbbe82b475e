import Posix

/// The one loop that owns all state: file descriptors, timers, and hooks that run
/// before it sleeps. Single-threaded by design (Redis `ae.c`): nothing it drives
/// needs a lock, and every change happens in one order.
///
/// Tests drive it with `runOnce(wait: false)` and a `ManualClock`: one iteration at a
/// time, no sleeping.
public final class EventLoop {
  public typealias IOHandler = (IOEvents) -> Void
  /// A repeating timer's body returns the delay until it should run again, or nil to
  /// stop.
  public typealias TimerBody = () -> Duration?

  public struct Registration: Hashable, Sendable {
    fileprivate let token: UInt64
  }

  public struct TimerID: Hashable, Sendable {
    fileprivate let value: UInt64
  }

  public let clock: LoopClock
  private let epoll: Epoll
  private let wakeFD: EventFD
  private var handlers: [UInt64: (fd: FileDescriptor, handler: IOHandler)] = [:]
  private var nextToken: UInt64 = 1
  private var timers = TimerHeap()
  private var timerBodies: [UInt64: TimerBody] = [:]
  private var beforeSleepHooks: [() -> Void] = []
  private var pendingTasks: [() -> Void] = []
  private var stopRequested = false
  /// Counts iterations, so a hook can tell whether it already ran in this one.
  public private(set) var iteration: UInt64 = 0

  public init(clock: LoopClock = MonotonicClock()) throws(Errno) {
    self.clock = clock
    epoll = try Epoll()
    wakeFD = try EventFD()
    try epoll.add(wakeFD.fd, events: .readable, token: 0)
  }

  deinit {
    wakeFD.fd.close()
  }

  // MARK: File descriptors

  /// Calls `handler` whenever `fd` is ready for `events`. The loop does not own `fd`.
  public func register(
    _ fd: FileDescriptor, events: IOEvents, handler: @escaping IOHandler
  ) throws(Errno) -> Registration {
    let token = nextToken
    nextToken += 1
    try epoll.add(fd, events: events, token: token)
    handlers[token] = (fd, handler)
    return Registration(token: token)
  }

  public func modify(_ registration: Registration, events: IOEvents) throws(Errno) {
    guard let entry = handlers[registration.token] else { return }
    try epoll.modify(entry.fd, events: events, token: registration.token)
  }

  public func deregister(_ registration: Registration) {
    guard let entry = handlers.removeValue(forKey: registration.token) else { return }
    epoll.remove(entry.fd)
  }

  // MARK: Timers

  /// Runs `body` after `delay`, then again after each delay it returns.
  @discardableResult
  public func scheduleRepeating(after delay: Duration, _ body: @escaping TimerBody) -> TimerID {
    scheduleRepeating(at: clock.now + delay, body)
  }

  /// Runs `body` at `deadline` (at once when it has passed), then again after each
  /// delay it returns.
  @discardableResult
  public func scheduleRepeating(at deadline: LoopInstant, _ body: @escaping TimerBody) -> TimerID {
    let id = nextToken
    nextToken += 1
    timerBodies[id] = body
    timers.insert(deadline: deadline, id: id)
    return TimerID(value: id)
  }

  /// Runs `body` once, at `deadline`.
  @discardableResult
  public func schedule(at deadline: LoopInstant, _ body: @escaping () -> Void) -> TimerID {
    scheduleRepeating(at: deadline) {
      body()
      return nil
    }
  }

  /// Runs `body` once, after `delay`.
  @discardableResult
  public func schedule(after delay: Duration, _ body: @escaping () -> Void) -> TimerID {
    scheduleRepeating(after: delay) {
      body()
      return nil
    }
  }

  public func cancel(_ timer: TimerID) {
    timerBodies.removeValue(forKey: timer.value)
  }

  /// The time until the earliest live timer, or nil when none is scheduled.
  public var nextTimerDelay: Duration? {
    while let top = timers.peek() {
      if timerBodies[top.id] == nil {
        _ = timers.pop()
        continue
      }
      return max(top.deadline - clock.now, .zero)
    }
    return nil
  }

  // MARK: Hooks and tasks

  /// Runs `hook` at the end of every iteration, before the loop waits again: the place
  /// to flush queued writes and group-commit durable state.
  public func addBeforeSleepHook(_ hook: @escaping () -> Void) {
    beforeSleepHooks.append(hook)
  }

  /// Runs `task` on the next iteration, after I/O. Use it to defer work out of a
  /// handler without another timer. A task queued by a task runs one iteration later.
  public func execute(_ task: @escaping () -> Void) {
    pendingTasks.append(task)
  }

  /// Whether the next iteration will not wait for I/O (tasks are queued).
  public var hasQueuedTasks: Bool { !pendingTasks.isEmpty }

  /// Wakes a waiting loop from another thread. The only thread-safe method.
  public func wakeUp() { wakeFD.signal() }

  // MARK: Running

  /// One iteration: wait for I/O (up to the next timer when `wait` is true, not at all
  /// otherwise), run I/O handlers, deferred tasks and due timers, then the hooks.
  public func runOnce(wait: Bool = true) throws(Errno) {
    iteration &+= 1
    let timeout = wait && pendingTasks.isEmpty ? nextTimerDelay : .zero
    try epoll.wait(timeout: timeout) { token, events in
      if token == 0 {
        wakeFD.drain()
        return
      }
      handlers[token]?.handler(events)
    }
    runPendingTasks()
    runDueTimers()
    for hook in beforeSleepHooks { hook() }
  }

  /// Runs iterations until `stop()`.
  public func run() throws(Errno) {
    stopRequested = false
    while !stopRequested {
      try runOnce(wait: true)
    }
  }

  /// Makes `run()` return after the current iteration.
  public func stop() {
    stopRequested = true
  }

  public var isStopping: Bool { stopRequested }

  /// Runs the tasks queued so far; tasks they queue wait for the next iteration, so a
  /// task that re-queues itself cannot starve I/O, timers and the flush hooks.
  private func runPendingTasks() {
    guard !pendingTasks.isEmpty else { return }
    let tasks = pendingTasks
    pendingTasks.removeAll(keepingCapacity: true)
    for task in tasks { task() }
  }

  private func runDueTimers() {
    let now = clock.now
    while let top = timers.peek(), top.deadline <= now {
      _ = timers.pop()
      guard let body = timerBodies[top.id] else { continue }
      if let again = body() {
        // The body may have cancelled itself while running.
        if timerBodies[top.id] != nil {
          timers.insert(deadline: now + max(again, .nanoseconds(1)), id: top.id)
        }
      } else {
        timerBodies.removeValue(forKey: top.id)
      }
    }
  }
}
