import EventLoop
import JSON

/// Protocol-level counters, read by the `stats` method. Loop thread only.
public final class RPCStatistics {
  /// On the monotonic clock, not the loop's (a test's manual clock).
  public let startedAt: LoopInstant
  public var connectionsOpen = 0
  public var connectionsTotal = 0
  public var requestsTotal = 0
  /// Requests run, by method: counted in a counter per method, so counting hashes no name.
  public var requestsByMethod: [String: Int] {
    var counts: [String: Int] = [:]
    for (method, counter) in methodCounters where counter.count > 0 { counts[method] = counter.count }
    return counts
  }
  private var methodCounters: [String: MethodCounter] = [:]
  public var notificationsReceived = 0
  public var bytesIn = 0
  public var bytesOut = 0
  public var errorsTotal = 0
  public var errorsByCode: [Int64: Int] {
    Dictionary(errorCounts.map { ($0.code, $0.count) }, uniquingKeysWith: +)
  }
  /// A few dozen codes at most, in the order first seen: found by a short scan where a
  /// dictionary hashed the code on every error.
  private var errorCounts: [(code: Int64, count: Int)] = []

  public init(startedAt: LoopInstant = MonotonicClock().now) {
    self.startedAt = startedAt
    methodCounters.reserveCapacity(32)
  }

  final class MethodCounter {
    fileprivate(set) var count = 0
  }

  /// The counter of `method`'s requests, made when the method is registered.
  func counter(for method: String) -> MethodCounter {
    if let counter = methodCounters[method] { return counter }
    let counter = MethodCounter()
    methodCounters[method] = counter
    return counter
  }

  func countRequest(_ counter: MethodCounter) {
    requestsTotal += 1
    counter.count += 1
  }

  func countError(_ code: ErrorCode) {
    errorsTotal += 1
    if let index = errorCounts.firstIndex(where: { $0.code == code.rawValue }) {
      errorCounts[index].count += 1
    } else {
      errorCounts.append((code.rawValue, 1))
    }
  }
}
