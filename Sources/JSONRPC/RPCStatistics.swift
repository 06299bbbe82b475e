import JSON
import Posix

/// Protocol-level counters, read by the `stats` method. Loop thread only.
public final class RPCStatistics {
  public let startNanoseconds: UInt64
  public var connectionsOpen = 0
  public var connectionsTotal = 0
  public var requestsTotal = 0
  public var requestsByMethod: [String: Int] = [:]
  public var notificationsReceived = 0
  public var bytesIn = 0
  public var bytesOut = 0
  public var errorsTotal = 0
  public var errorsByCode: [Int64: Int] = [:]

  public init(startNanoseconds: UInt64 = Process.monotonicNanoseconds()) {
    self.startNanoseconds = startNanoseconds
  }

  func countRequest(_ method: String) {
    requestsTotal += 1
    requestsByMethod[method, default: 0] += 1
  }

  func countError(_ code: ErrorCode) {
    errorsTotal += 1
    errorsByCode[code.rawValue, default: 0] += 1
  }
}
