/// Logs to stderr, one line per event: stdout carries protocol bytes only.
///
/// An event is a name (`rollback`, `ratelimit.hold`, …), a sentence and typed fields
/// (docs/operations.md "Logs"). It is written as text (`netmodel: warn: the sentence; key=value …`)
/// or, with `--log-format json`, as one JSON object a line, by the renderer the
/// executable installs (`jsonRenderer`): the JSON encoder lives in a layer above this.
///
/// Everything is escaped where it is written, not at each call site, which leaves none
/// unescaped: sentences and fields carry text from outside (an API's error, a list's
/// cursor, a peer's name), and a line break in it cannot forge a line of its own, nor
/// an ESC reach the terminal (`EscapedText` in text, JSON's escapes in JSON).
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

    public var label: String {
      switch self {
      case .debug: return "debug"
      case .info: return "info"
      case .warn: return "warn"
      case .error: return "error"
      case .off: return "off"
      }
    }
  }

  /// A field's value: text (from outside, usually), a number or a flag.
  public enum Value: Sendable {
    case text(String)
    case integer(Int64)
    case flag(Bool)
  }

  /// A named value of an event. Names are the program's own (static), so only values
  /// need escaping; `time`, `level`, `event` and `message` are the line's own.
  public struct Field: Sendable {
    public let name: StaticString
    public let value: Value

    /// Text longer than `maxScalars` is cut there (marked `…`): a line stays a line.
    public init(_ name: StaticString, _ value: String) {
      self.name = name
      guard value.utf8.count > Field.maxScalars, value.unicodeScalars.count > Field.maxScalars else {
        self.value = .text(value)
        return
      }
      var cut = String.UnicodeScalarView(value.unicodeScalars.prefix(Field.maxScalars))
      cut.append("…")
      self.value = .text(String(cut))
    }

    public static let maxScalars = 1000

    public init(_ name: StaticString, _ value: Int) { (self.name, self.value) = (name, .integer(Int64(value))) }
    public init(_ name: StaticString, _ value: Int64) { (self.name, self.value) = (name, .integer(value)) }
    public init(_ name: StaticString, _ value: Bool) { (self.name, self.value) = (name, .flag(value)) }
  }

  public struct Event: Sendable {
    public let level: Level
    /// What happened, stable for tools to match (`rollback`); `message` for the
    /// sentences that have no event of their own.
    public let name: StaticString
    public let message: String
    public let fields: [Field]

    public init(level: Level, name: StaticString, message: String, fields: [Field]) {
      (self.level, self.name, self.message, self.fields) = (level, name, message, fields)
    }
  }

  /// Set once at start, before the loop runs; read only from the loop's thread. The
  /// server's default is `info` (ServeOptions); warn here keeps tests in-process quiet.
  nonisolated(unsafe) public static var level: Level = .warn
  /// The JSON line of an event (without its newline), given the time as RFC 3339 text;
  /// nil writes the text form. Set once at start, as `level`.
  nonisolated(unsafe) public static var jsonRenderer: ((Event, String) -> [UInt8])?

  public static func debug(_ message: @autoclosure () -> String) { write(.debug, "message", message, []) }
  public static func info(_ message: @autoclosure () -> String) { write(.info, "message", message, []) }
  public static func warn(_ message: @autoclosure () -> String) { write(.warn, "message", message, []) }
  public static func error(_ message: @autoclosure () -> String) { write(.error, "message", message, []) }

  /// An event with fields; nothing is built when its level is off.
  public static func event(
    _ level: Level, _ name: StaticString, _ message: @autoclosure () -> String,
    _ fields: @autoclosure () -> [Field] = []
  ) {
    write(level, name, message, fields())
  }

  public static func isEnabled(_ level: Level) -> Bool { level >= Log.level && level != .off }

  private static func write(
    _ level: Level, _ name: StaticString, _ message: () -> String, _ fields: @autoclosure () -> [Field]
  ) {
    guard isEnabled(level) else { return }
    let event = Event(level: level, name: name, message: message(), fields: fields())
    if let jsonRenderer {
      var line = jsonRenderer(event, timestamp(Process.wallClockSeconds()))
      line.append(UInt8(ascii: "\n"))
      try? FileDescriptor.standardError.writeAll(line)
    } else {
      try? FileDescriptor.standardError.writeAll(text(event) + "\n")
    }
  }

  /// `netmodel: LEVEL: sentence` then `; name=value` for each field: a value that is
  /// not a plain word is quoted, with `"` and every control escaped.
  public static func text(_ event: Event) -> String {
    var line = "netmodel: \(event.level.label): \(EscapedText.line(event.message))"
    for (index, field) in event.fields.enumerated() {
      line += index == 0 ? "; " : " "
      line += "\(field.name)="
      switch field.value {
      case .text(let text): line += quotedIfNeeded(text)
      case .integer(let number): line += String(number)
      case .flag(let flag): line += flag ? "true" : "false"
      }
    }
    return line
  }

  /// A value as it shows after `name=`: as it is when it is a plain word, else quoted.
  static func quotedIfNeeded(_ text: String) -> String {
    let escaped = EscapedText.line(text)
    let plain =
      !escaped.isEmpty
      && !escaped.utf8.contains(where: {
        $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: ";")
          || $0 == UInt8(ascii: "\\")
      })
    guard !plain else { return escaped }
    var quoted = "\""
    for character in escaped.unicodeScalars {
      if character == "\"" { quoted += "\\\"" } else { quoted.unicodeScalars.append(character) }
    }
    return quoted + "\""
  }

  /// RFC 3339 in UTC with milliseconds: `2026-12-02T03:04:05.678Z`.
  public static func timestamp(_ secondsSince1970: Double) -> String {
    RFC3339.milliseconds(since1970: Int64((secondsSince1970 * 1000).rounded(.down)))
  }
}
