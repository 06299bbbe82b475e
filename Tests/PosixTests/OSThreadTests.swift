import Glibc
import Posix
import Testing

@Suite struct OSThreadTests {
  static func readText(_ path: String) throws -> String {
    String(decoding: try FileSystem.readFile(path), as: UTF8.self)
  }

  /// The signal numbers blocked in a thread's mask, as /proc/thread-self/status shows it.
  static func blockedSignals() throws -> Set<Int32> {
    let status = try readText("/proc/thread-self/status")
    let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") })
    let mask = try #require(UInt64(line.dropFirst("SigBlk:".count).trimmingPrefix(while: \.isWhitespace), radix: 16))
    return Set((1...64).filter { mask & (1 << UInt64($0 - 1)) != 0 }.map(Int32.init))
  }

  @Test func theBodyRunsOnANamedThreadWithSignalsBlockedAndJoinWaitsForIt() throws {
    let before = try Self.blockedSignals()
    let seen = Locked<(name: String, blocked: Set<Int32>, done: Bool)?>(nil)
    let thread = try OSThread.start(name: "nm test thread, longer than fifteen") {
      let name = (try? Self.readText("/proc/thread-self/comm")) ?? ""
      let blocked = (try? Self.blockedSignals()) ?? []
      usleep(50_000)
      seen.withLock { $0 = (name, blocked, true) }
    }
    thread.join()
    let report = try #require(seen.withLock { $0 }, "join returned before the body ran")
    #expect(report.done)
    #expect(report.name == "nm test thread,\n", "cut at 15 bytes, as the kernel keeps it")
    for signal in [SIGTERM, SIGINT, SIGHUP, SIGWINCH, SIGPIPE, SIGCHLD] {
      #expect(report.blocked.contains(signal), "signal \(signal) reaches the thread")
    }
    #expect(try Self.blockedSignals() == before, "the caller's own mask is as it was")
  }
}
