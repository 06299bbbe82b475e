/// Logs to stderr, one line per message: stdout carries protocol bytes only.
///
/// A message is escaped whole (`EscapedText`) before its prefix and newline are added:
/// messages carry text from outside (an API's error, a list's cursor, a peer's method
/// name), and escaping here rather than at each call site leaves none unescaped — a
/// line break in it cannot forge a line of its own, nor an ESC reach the terminal.
public enum Log {
  public enum Level: Int, Comparable, Sendable {
    case debug, info, warn, error, off

    public init?(name: String) {
      switch name.lowercased() {
      case "debug", "trace": self = .debug
      case "info": self = .info
      case "warn", "warning": self = .warn
      case "error": self = .error
      case "off", "none", "quiet": self = .off
      default: return nil
      }
    }

    public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }

    var label: String {
      switch self {
      case .debug: return "debug"
      case .info: return "info"
      case .warn: return "warn"
      case .error: return "error"
      case .off: return "off"
      }
    }
  }

  /// Set once at start, before the loop runs; read only from the loop's thread.
  nonisolated(unsafe) public static var level: Level = .warn

  public static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
  public static func info(_ message: @autoclosure () -> String) { write(.info, message) }
  public static func warn(_ message: @autoclosure () -> String) { write(.warn, message) }
  public static func error(_ message: @autoclosure () -> String) { write(.error, message) }

  public static func isEnabled(_ level: Level) -> Bool { level >= Log.level && level != .off }

  private static func write(_ level: Level, _ message: () -> String) {
    guard isEnabled(level) else { return }
    try? FileDescriptor.standardError.writeAll("netmodel: \(level.label): \(EscapedText.line(message()))\n")
  }
}
