import JSON
import Posix

/// `--log-format json`: one object a line, for journald and tools (docs/operations.md "Logs"),
/// written with the project's own JSON string encoder, so a value from outside is one
/// escaped string however it is made.
enum LogFormat: String {
  case text, json

  func install() {
    switch self {
    case .text: Log.jsonRenderer = nil
    case .json: Log.jsonRenderer = { event, time in LogFormat.jsonLine(event, time: time) }
    }
  }

  /// `{"time":…,"level":…,"event":…,"message":…,` then each field under its name.
  static func jsonLine(_ event: Log.Event, time: String) -> [UInt8] {
    var line: [UInt8] = []
    line.reserveCapacity(128 + event.message.utf8.count)
    appendLiteral(#"{"time":"#, to: &line)
    appendJSONString(time, to: &line)
    appendLiteral(#","level":"#, to: &line)
    appendJSONString(event.level.label, to: &line)
    appendLiteral(#","event":"#, to: &line)
    appendJSONString(event.name.description, to: &line)
    appendLiteral(#","message":"#, to: &line)
    appendLogJSONString(event.message, to: &line)
    for field in event.fields {
      line.append(UInt8(ascii: ","))
      appendJSONString(field.name.description, to: &line)
      line.append(UInt8(ascii: ":"))
      switch field.value {
      case .text(let text): appendLogJSONString(text, to: &line)
      case .integer(let number): appendDecimal(number, to: &line)
      case .flag(let flag): appendLiteral(flag ? "true" : "false", to: &line)
      }
    }
    line.append(UInt8(ascii: "}"))
    return line
  }
}
