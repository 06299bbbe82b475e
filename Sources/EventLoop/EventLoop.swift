import Posix

/// The loop that owns a thread's state: file descriptors, timers, and hooks that run
/// before it sleeps. Single-threaded by design (Redis `ae.c`): nothing it drives
/// needs a lock, and every change happens in one order. The models have one; libcurl
/// gets its own, on its thread, while many requests are in flight (`HTTP.CurlRunner`),
/// and the two talk through mailboxes.
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
    fileprivate let slot: Int
  }

  public let clock: LoopClock
  private let epoll: Epoll
  private let wakeFD: EventFD
  private var handlers: [UInt64: (fd: FileDescriptor, handler: IOHandler)] = [:]
  private var nextToken: UInt64 = 1
  private var timers = TimerHeap()
  /// Timers' bodies, each in a slot its id names with its serial: finding one is an
  /// array read, where a table keyed by the id hashed it (a REST round trip schedules
  /// and cancels libcurl's timer about twice). A slot is reused once its timer is
  /// cancelled or done; an old id's serial no longer matches it, so it finds nothing.
  private var timerSlots: [(serial: UInt64, body: TimerBody?)] = []
  private var freeTimerSlots: [Int] = []
  private var beforeSleepHooks: [() -> Void] = []
  private var pendingTasks: [() -> Void] = []
  private var spareTasks: [() -> Void] = []
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
    let slot: Int
    if let free = freeTimerSlots.popLast() {
      slot = free
      timerSlots[slot] = (id, body)
    } else {
      slot = timerSlots.count
      timerSlots.append((id, body))
    }
    timers.insert(deadline: deadline, id: id, slot: slot)
    return TimerID(value: id, slot: slot)
  }

  /// The body of the live timer `id` in `slot`; nil once it is cancelled or done.
  private func timerBody(_ id: UInt64, _ slot: Int) -> TimerBody? {
    timerSlots[slot].serial == id ? timerSlots[slot].body : nil
  }

  /// Forgets the timer `id` (nothing when its slot already holds another).
  private func freeTimer(_ id: UInt64, _ slot: Int) {
    guard timerSlots[slot].serial == id else { return }
    timerSlots[slot] = (0, nil)  // no timer's id is 0: tokens start at 1
    freeTimerSlots.append(slot)
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
    freeTimer(timer.value, timer.slot)
  }

  /// The time until the earliest live timer, or nil when none is scheduled.
  public var nextTimerDelay: Duration? {
    while let top = timers.peek() {
      if timerBody(top.id, top.slot) == nil {
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
    // The queue is swapped with the spare (empty) array, whose room it takes: copying the
    // tasks out and emptying the queue in place allocated a new array every turn.
    var tasks: [() -> Void] = []
    swap(&tasks, &spareTasks)
    swap(&tasks, &pendingTasks)
    for task in tasks { task() }
    tasks.removeAll(keepingCapacity: true)
    spareTasks = tasks
  }

  private func runDueTimers() {
    let now = clock.now
    while let top = timers.peek(), top.deadline <= now {
      _ = timers.pop()
      guard let body = timerBody(top.id, top.slot) else { continue }
      if let again = body() {
        // The body may have cancelled itself while running.
        if timerBody(top.id, top.slot) != nil {
          timers.insert(deadline: now + max(again, .nanoseconds(1)), id: top.id, slot: top.slot)
        }
      } else {
        freeTimer(top.id, top.slot)
      }
    }
  }
}
