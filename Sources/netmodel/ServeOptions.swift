import JSONRPC
import NetworkModels
import Posix

/// `netmodel serve` options, parsed by hand: the argument parser is in no package
/// the toolchain ships, and this keeps start-up light.
struct ServeOptions {
  var useStdio = true
  var socketPath: String?
  /// `--socket=PATH` rather than `--socket`: a socket passed by a service manager must be bound there.
  var socketPathGiven = false
  /// Info: what happened to users' intents and connections, bounded (docs/operations.md "Logs").
  var logLevel = Log.Level.info
  var logFormat = LogFormat.text
  var maxMessageBytes = 16 << 20
  var maxUnreadBytes = Connection.defaultMaxUnreadBytes
  var maxBatchElements = Connection.defaultMaxBatchElements
  var maxPendingRequests = Connection.defaultMaxPendingRequests
  var shutdownTimeout = RPCServer.defaultShutdownTimeout
  var stateDirectory: String?
  var simulation: SimulationSettings?
  var seed: UInt64?
  /// nil: the configuration's choice (rollback when it says nothing).
  var whenExhausted: RetryPolicy.WhenExhausted?
  var maxAgeMs: UInt64 = 30_000
  var backend = Backend.local
  var configPath: String?
  var environment: String?
  var entityEviction = EvictionPolicy.entities
  var listEviction = EvictionPolicy.lists
  /// The REST API's requests a second (0: no limit).
  var maxAPICallsPerSecond = 200

  enum Backend: String {
    case local, rest
  }

  struct UsageError: Error {
    let message: String
  }

  init(arguments: ArraySlice<String>) throws(UsageError) {
    var rest = arguments
    while let argument = rest.popFirst() {
      let (name, inlineValue) = ServeOptions.split(argument)
      func value() throws(UsageError) -> String {
        if let inlineValue { return inlineValue }
        guard let next = rest.popFirst() else { throw UsageError(message: "\(name) needs a value") }
        return next
      }
      switch name {
      case "--socket":
        socketPath = inlineValue ?? ServeOptions.defaultSocketPath()
        socketPathGiven = inlineValue != nil
      case "--no-stdio":
        useStdio = false
      case "--log-level":
        let text = try value()
        guard let level = Log.Level(name: text) else {
          throw UsageError(message: "--log-level must be debug, info, warn, error or off, not \(text)")
        }
        logLevel = level
      case "--log-format":
        let text = try value()
        guard let format = LogFormat(rawValue: text) else {
          throw UsageError(message: "--log-format must be text or json, not \(text)")
        }
        logFormat = format
      case "--max-message-bytes":
        let text = try value()
        guard let bytes = Int(text), bytes >= 64 else {
          throw UsageError(message: "--max-message-bytes must be a number of bytes ≥ 64, not \(text)")
        }
        maxMessageBytes = bytes
      case "--max-unread-bytes":
        maxUnreadBytes = try ServeOptions.count(name, try value(), minimum: 1024)
      case "--max-batch-elements":
        maxBatchElements = try ServeOptions.count(name, try value(), minimum: 1)
      case "--max-pending-requests":
        maxPendingRequests = try ServeOptions.count(name, try value(), minimum: 1)
      case "--shutdown-timeout-ms":
        let text = try value()
        guard let ms = UInt64(text), ms <= 3_600_000 else {
          throw UsageError(
            message: "--shutdown-timeout-ms must be a number of milliseconds (at most 3600000), not \(text)")
        }
        shutdownTimeout = .milliseconds(ms)
      case "--state-dir":
        stateDirectory = try value()
      case "--simulate":
        simulation = try SimulationSettings.parse(option: try value())
      case "--seed":
        let text = try value()
        guard let number = UInt64(text) else {
          throw UsageError(message: "--seed must be a non-negative integer, not \(text)")
        }
        seed = number
      case "--when-exhausted":
        switch try value() {
        case "rollback": whenExhausted = .rollBack
        case "queue": whenExhausted = .keepQueued
        case let other: throw UsageError(message: "--when-exhausted must be rollback or queue, not \(other)")
        }
      case "--backend":
        let text = try value()
        guard let chosen = Backend(rawValue: text) else {
          throw UsageError(message: "--backend must be local or rest, not \(text)")
        }
        backend = chosen
      case "--config":
        configPath = try value()
      case "--environment":
        environment = try value()
      case "--max-age-ms":
        let text = try value()
        guard let number = UInt64(text) else { throw UsageError(message: "--max-age-ms must be a number, not \(text)") }
        maxAgeMs = number
      case "--max-entities":
        entityEviction.maxCount = try ServeOptions.count(name, try value(), minimum: 1)
      case "--entity-idle-ms":
        entityEviction.idle = .milliseconds(try ServeOptions.count(name, try value(), minimum: 0))
      case "--max-lists":
        listEviction.maxCount = try ServeOptions.count(name, try value(), minimum: 1)
      case "--list-idle-ms":
        listEviction.idle = .milliseconds(try ServeOptions.count(name, try value(), minimum: 0))
      case "--max-api-calls-per-second":
        maxAPICallsPerSecond = try ServeOptions.count(name, try value(), minimum: 0)
      default:
        throw UsageError(message: "unknown option \(argument)")
      }
    }
    if backend == .rest && configPath == nil {
      throw UsageError(message: "--backend rest needs --config FILE (see schema/backend.schema.json)")
    }
    if backend == .local && (configPath != nil || environment != nil) {
      throw UsageError(message: "--config and --environment are for --backend rest")
    }
    if !useStdio && socketPath == nil {
      throw UsageError(message: "--no-stdio needs --socket: there would be nothing to serve")
    }
  }

  static func count(_ name: String, _ text: String, minimum: Int) throws(UsageError) -> Int {
    guard let number = Int(text), number >= minimum else {
      throw UsageError(message: "\(name) must be a whole number ≥ \(minimum), not \(text)")
    }
    return number
  }

  static func split(_ argument: String) -> (String, String?) {
    guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
    return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
  }

  /// `$XDG_RUNTIME_DIR/netmodel/netmodel.sock`, else `/tmp/netmodel-$UID/netmodel.sock`.
  static func defaultSocketPath() -> String {
    if let runtime = Process.environment("XDG_RUNTIME_DIR"), !runtime.isEmpty {
      return runtime + "/netmodel/netmodel.sock"
    }
    return "/tmp/netmodel-\(UnixSocket.currentUID())/netmodel.sock"
  }
}
