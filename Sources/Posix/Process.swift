import CSystem
import Glibc

public enum Process {
  /// SIGPIPE would kill the server when a peer goes away; writes see EPIPE instead.
  public static func ignoreBrokenPipes() { nm_ignore_sigpipe() }

  /// Nanoseconds of the monotonic clock.
  public static func monotonicNanoseconds() -> UInt64 { nm_monotonic_ns() }

  /// Wall-clock seconds since 1970, with a fraction (CLOCK_REALTIME).
  public static func wallClockSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }

  /// `HH:MM:SS` of `seconds` since 1970 in the local time zone (localtime_r: `TZ`,
  /// /etc/localtime), as a person at this terminal reads a clock.
  public static func localTimeOfDay(secondsSince1970 seconds: Int) -> String {
    var time = time_t(seconds)
    var parts = tm()
    guard localtime_r(&time, &parts) != nil else { return "?" }
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : String(value) }
    return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
  }

  public static func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
  }

  public static func exit(_ code: Int32) -> Never { Glibc.exit(code) }

  /// Resident set size, from /proc/self/statm (its second field, in pages).
  public static func residentMemoryBytes() -> Int {
    let fd = open("/proc/self/statm", O_RDONLY)
    guard fd >= 0 else { return 0 }
    defer { Glibc.close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let count = Glibc.read(fd, &buffer, buffer.count)
    guard count > 0 else { return 0 }
    let fields = buffer[0..<count].split(separator: UInt8(ascii: " "))
    guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  }
}

extension Process {
  /// This process's id. The corresponding C function is `getpid`.
  public static var id: Int32 { getpid() }

  /// Whether a process with this id exists (it may belong to another user).
  /// The corresponding C function is `kill` with signal 0.
  public static func exists(_ pid: Int32) -> Bool {
    pid > 0 && (kill(pid, 0) == 0 || nm_errno() != ESRCH)
  }

  /// The current user's home folder from the password database, for when `$HOME`
  /// is unset. The corresponding C function is `getpwuid`.
  public static func passwordDatabaseHome() -> String? {
    guard let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir else { return nil }
    let home = String(cString: dir)
    return home.isEmpty ? nil : home
  }
}
