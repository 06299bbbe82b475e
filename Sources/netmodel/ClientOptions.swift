/// The options of `call`, `watch`, `stop` and `top`, taken from anywhere among the arguments
/// (before a `--`), so `top --json --socket=PATH` means `top --socket=PATH --json`;
/// what is left are the operands, in order (METHOD and params, topics).
struct ClientOptions {
  enum Option {
    case socket, timeout, json, count, until
  }

  struct UsageError: Error {
    let message: String
  }

  var socket = ServeOptions.defaultSocketPath()
  /// `--timeout` in milliseconds; nil: wait as long as the server takes.
  var timeout: Int?
  var json = false
  /// `watch --count N`: end after N changes.
  var count: Int?
  /// `watch --until TEST`, each given once; all must hold (`WatchCondition`).
  var until: [String] = []
  var operands: [String] = []

  /// `command` names the subcommand in messages; `accepted` are the options it takes:
  /// any other argument starting with `--` is a usage error (exit 2), not an operand.
  init(_ arguments: ArraySlice<String>, command: String, accepted: Set<Option>) throws(UsageError) {
    var rest = arguments
    while let argument = rest.popFirst() {
      if argument == "--" {
        operands.append(contentsOf: rest)
        break
      }
      guard argument.hasPrefix("--") else {
        operands.append(argument)
        continue
      }
      let (name, inlineValue) = ServeOptions.split(argument)
      func value() throws(UsageError) -> String {
        if let inlineValue { return inlineValue }
        guard let next = rest.popFirst() else { throw UsageError(message: "\(command): \(name) needs a value") }
        return next
      }
      switch name {
      case "--socket" where accepted.contains(.socket):
        socket = try value()
      case "--timeout" where accepted.contains(.timeout):
        let text = try value()
        guard let ms = Int(text), ms > 0 else {
          throw UsageError(message: "\(command): --timeout needs a number of milliseconds above 0, not \(text)")
        }
        timeout = ms
      case "--json" where accepted.contains(.json) && inlineValue == nil:
        json = true
      case "--count" where accepted.contains(.count):
        let text = try value()
        guard let changes = Int(text), changes > 0 else {
          throw UsageError(message: "\(command): --count needs a number of changes above 0, not \(text)")
        }
        count = changes
      case "--until" where accepted.contains(.until):
        until.append(try value())
      default:
        throw UsageError(message: "\(command): unknown option \(argument)")
      }
    }
  }
}
