import JSONRPC
import NetworkModels
import Posix

/// `netmodel serve` options, from netmodel.json and the command line (which overrides
/// it), parsed by hand: the argument parser is in no package the toolchain ships, and
/// this keeps start-up light. What each option does is in `ServeOption.table`.
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
  /// `--max-held-bytes`: the bound on entity details and list items (0: none).
  var maxHeldBytes = HeldBytes.defaultLimit
  var maxWarmBytes = WarmStates.defaultMaxBytes
  /// `--max-ledger-entries`, `--max-ledger-bytes`: the bounds of the mutations ledger.
  var maxLedgerEntries = MutationLedger.defaultMaxEntries
  var maxLedgerBytes = MutationLedger.defaultMaxBytes
  /// The REST API's requests a second (0: no limit).
  var maxAPICallsPerSecond = 200
  /// `--print-config`: say what is in force instead of serving.
  var printConfig = false
  /// Which file was looked for, and whether it was there.
  var configFile: ServeConfigFile.Location?
  /// What each option given was given as (`--socket` alone: its path), and by whom, in
  /// the order applied: the file's first, then the command line's.
  var given: [(option: ServeOption, text: String?, origin: Setting.Origin)] = []

  enum Backend: String {
    case local, rest
  }

  struct UsageError: Error {
    let message: String
  }

  /// One option as the command line or the file gives it.
  struct Setting {
    enum Origin {
      case commandLine
      /// The file, and where in it (the member's JSON Pointer).
      case file(path: String, pointer: String)
    }

    let option: ServeOption
    let text: String?
    let origin: Origin
  }

  /// The command line alone, no file read (the tests' way in).
  init(arguments: ArraySlice<String>) throws(UsageError) {
    try self.init(settings: try ServeOptions.commandLine(arguments))
  }

  /// `settings` applied in order, then the checks across options.
  init(settings: [Setting]) throws(UsageError) {
    for setting in settings {
      do {
        try setting.option.apply(&self, setting.text)
      } catch {
        guard case .file(let path, let pointer) = setting.origin else { throw error }
        throw UsageError(message: "\(path) at \(pointer): \(error.message)")
      }
      let shown = setting.text ?? (setting.option.name == "socket" ? socketPath : nil)
      given.append((setting.option, shown, setting.origin))
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

  /// What `serve` runs with: netmodel.json (the default one, or `--config-file`'s),
  /// then the command line over it.
  static func load(arguments: ArraySlice<String>) throws(UsageError) -> ServeOptions {
    let commandLine = try ServeOptions.commandLine(arguments)
    let named = commandLine.last { $0.option.name == "config-file" }?.text
    var location = try ServeConfigFile.Location.resolve(named: named)
    let fromFile = try ServeConfigFile.settings(at: &location)
    var options = try ServeOptions(settings: fromFile + commandLine)
    options.configFile = location
    return options
  }

  /// The command line's options, checked for their syntax only (values are checked when
  /// they are applied, so a file's and the command line's get the same words).
  static func commandLine(_ arguments: ArraySlice<String>) throws(UsageError) -> [Setting] {
    var rest = arguments
    var settings: [Setting] = []
    while let argument = rest.popFirst() {
      let (name, inlineValue) = ServeOptions.split(argument)
      let key = String(decoding: name.utf8.dropFirst(2), as: UTF8.self)
      guard name.utf8.starts(with: "--".utf8), let option = ServeOption.named(key) else {
        throw UsageError(message: "unknown option \(argument)")
      }
      var text = inlineValue
      switch option.value {
      case .none:
        if inlineValue != nil { throw UsageError(message: "\(name) takes no value") }
      case .optionalInline: break
      case .text, .path, .count:
        if text == nil {
          guard let next = rest.popFirst() else { throw UsageError(message: "\(name) needs a value") }
          text = next
        }
      }
      settings.append(Setting(option: option, text: text, origin: .commandLine))
    }
    return settings
  }

  static func split(_ argument: String) -> (String, String?) {
    guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
    return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
  }

  /// `$XDG_RUNTIME_DIR/netmodel/netmodel.sock`, else `/tmp/netmodel-$UID/netmodel.sock`.
  /// A relative `$XDG_RUNTIME_DIR` is ignored, as the XDG Base Directory specification
  /// says: it would name a different socket from each folder a client runs in.
  static func defaultSocketPath() -> String {
    if let runtime = Process.environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
      return runtime + "/netmodel/netmodel.sock"
    }
    return "/tmp/netmodel-\(UnixSocket.currentUID())/netmodel.sock"
  }
}
