import Testing

@testable import JSONRPC

/// A peer's failed notifications: the first of each minute are logged, the rest counted
/// and told once the minute is over or the connection closes.
struct LogBudgetTests {
  @Test func theFirstOfAMinuteAreWrittenTheRestCountedAndToldAfter() {
    var budget = LogBudget()
    let start: UInt64 = 5_000_000_000
    for n in 0..<LogBudget.linesPerMinute {
      let (write, before) = budget.admit(now: start + UInt64(n))
      #expect(write && before == 0)
    }
    for n in 0..<25 { #expect(budget.admit(now: start + 1_000 + UInt64(n)).write == false) }
    #expect(budget.suppressed == 25)
    let (write, before) = budget.admit(now: start + LogBudget.minute)
    #expect(write && before == 25, "a new minute: its first line is written, the last minute's rest told")
    #expect(budget.suppressed == 0)
    for _ in 1..<LogBudget.linesPerMinute { _ = budget.admit(now: start + LogBudget.minute + 1) }
    _ = budget.admit(now: start + LogBudget.minute + 2)
    #expect(budget.takeSuppressed() == 1, "told at close")
    #expect(budget.takeSuppressed() == 0, "and only once")
  }
}
