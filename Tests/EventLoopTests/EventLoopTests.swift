import EventLoop
import Posix
import Testing

@Suite struct EventLoopTests {
  @Test func timersFireInDeadlineOrderOnlyWhenTheClockReachesThem() throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    var fired: [String] = []
    loop.schedule(after: .milliseconds(20)) { fired.append("b") }
    loop.schedule(after: .milliseconds(10)) { fired.append("a") }
    loop.schedule(after: .milliseconds(20)) { fired.append("c") }
    try loop.runOnce(wait: false)
    #expect(fired.isEmpty)
    #expect(loop.nextTimerDelay == .milliseconds(10))
    clock.advance(by: .milliseconds(10))
    try loop.runOnce(wait: false)
    #expect(fired == ["a"])
    clock.advance(by: .milliseconds(10))
    try loop.runOnce(wait: false)
    #expect(fired == ["a", "b", "c"])
    #expect(loop.nextTimerDelay == nil)
  }

  @Test func aTimerRunsAgainAfterTheDelayItReturnsAndStopsOnNil() throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    var runs = 0
    loop.scheduleRepeating(after: .milliseconds(5)) {
      runs += 1
      return runs < 3 ? .milliseconds(5) : nil
    }
    for _ in 0..<10 {
      clock.advance(by: .milliseconds(5))
      try loop.runOnce(wait: false)
    }
    #expect(runs == 3)
  }

  @Test func aDelayBelowZeroIsDueAtOnce() throws {
    let loop = try EventLoop(clock: ManualClock())
    var ran = false
    loop.schedule(after: .milliseconds(-5)) { ran = true }
    #expect(loop.nextTimerDelay == .zero)
    try loop.runOnce(wait: false)
    #expect(ran)
  }

  @Test func aDelayBeyondTheClocksRangeNeverComes() throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    var ran = false
    loop.schedule(after: .seconds(Int64.max)) { ran = true }
    clock.advance(by: .seconds(1))
    try loop.runOnce(wait: false)
    #expect(!ran)
  }

  @Test func cancelledTimersNeverRun() throws {
    let clock = ManualClock()
    let loop = try EventLoop(clock: clock)
    var ran = false
    let timer = loop.schedule(after: .milliseconds(1)) { ran = true }
    loop.cancel(timer)
    clock.advance(by: .milliseconds(5))
    try loop.runOnce(wait: false)
    #expect(!ran)
    #expect(loop.nextTimerDelay == nil)
  }

  @Test func readinessReachesTheHandlerAndHooksRunAfter() throws {
    let loop = try EventLoop(clock: ManualClock())
    let (a, b) = try FileDescriptor.socketPair()
    defer {
      a.close()
      b.close()
    }
    var order: [String] = []
    let registration = try loop.register(a, events: .readable) { events in
      #expect(events.contains(.readable))
      var byte: UInt8 = 0
      _ = try? a.read(into: &byte, count: 1)
      order.append("read \(byte)")
    }
    loop.addBeforeSleepHook { order.append("hook") }
    try loop.runOnce(wait: false)
    #expect(order == ["hook"])
    var byte: UInt8 = 7
    _ = try b.write(&byte, count: 1)
    try loop.runOnce(wait: false)
    #expect(order == ["hook", "read 7", "hook"])
    loop.deregister(registration)
    _ = try b.write(&byte, count: 1)
    try loop.runOnce(wait: false)
    #expect(order == ["hook", "read 7", "hook", "hook"])
  }

  @Test func executedTasksRunOnTheNextIterationInOrderAndCannotStarveTheLoop() throws {
    let loop = try EventLoop(clock: ManualClock())
    var order: [Int] = []
    loop.execute {
      order.append(1)
      loop.execute { order.append(3) }
    }
    loop.execute { order.append(2) }
    #expect(order.isEmpty)
    try loop.runOnce(wait: false)
    #expect(order == [1, 2])
    try loop.runOnce(wait: false)
    #expect(order == [1, 2, 3])

    var hooks = 0
    loop.addBeforeSleepHook { hooks += 1 }
    func forever() { loop.execute { forever() } }
    forever()
    try loop.runOnce(wait: false)
    #expect(hooks == 1, "a task that re-queues itself must not keep the loop from its hooks")
  }

  @Test func wakeUpEndsAWaitWithoutTimers() throws {
    let loop = try EventLoop()
    loop.wakeUp()
    // Would block forever without the wake-up's readable eventfd.
    try loop.runOnce(wait: true)
  }
}
