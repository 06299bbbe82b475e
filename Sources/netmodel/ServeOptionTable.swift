import JSONRPC
import NetworkModels
import Posix

/// One `serve` option. The table below is the only list of them: the command line,
/// netmodel.json (`ServeConfigFile`), `--help`, `--print-config` and the test that holds
/// schema/serve-config.schema.json to it all read it, so an option added here is
/// accepted in the file too. An option added here goes into the schema as well
/// (`ServeOptionTableTests` fails until it does), and into the man page, docs/operations.md's
/// table and the completions (`Tests/interop/test_install.py` holds them to `--help`).
struct ServeOption: Sendable {
  enum Value: Sendable {
    /// A flag: nothing on the command line; `true` or `false` in the file.
    case none
    /// `--socket[=PATH]`: a value only after `=`.
    case optionalInline(String)
    /// A value (`LEVEL`); a JSON string in the file.
    case text(String)
    /// A file or folder; in the file a JSON string, `~/` is the home folder and a relative
    /// path is relative to the file's folder.
    case path(String)
    /// A whole number (`N`); a JSON integer in the file.
    case count(String)
  }

  enum Scope: Sendable {
    case everywhere
    /// How this process is reached, or what this run does (`--print-config`): the
    /// starter's choice, not a setting. An editor spawning `serve` over stdio reads the
    /// same file as the user service, and a `socket` there would make it fight the
    /// service for the socket.
    case commandLineOnly
  }

  typealias Apply = @Sendable (inout ServeOptions, String?) throws(ServeOptions.UsageError) -> Void

  /// The long name, without `--`: also the key in netmodel.json.
  let name: String
  let value: Value
  var scope = Scope.everywhere
  /// What `--help` says, in lines of at most 50 columns.
  let help: String
  /// What `--print-config` shows when the option is not given (nil: "-", not set).
  var defaultText: String?
  /// Takes the value (nil for a flag, or `--socket` alone) into the options; a bad
  /// value throws a message naming the option.
  let apply: Apply

  var takesValue: Bool {
    switch value {
    case .none, .optionalInline: false
    case .text, .path, .count: true
    }
  }

  /// `--name VALUE` as `--help` shows it.
  var synopsis: String {
    switch value {
    case .none: "--\(name)"
    case .optionalInline(let placeholder): "--\(name)[=\(placeholder)]"
    case .text(let placeholder), .path(let placeholder), .count(let placeholder): "--\(name) \(placeholder)"
    }
  }

  /// The entry named `name`, compared by bytes (the name comes from outside).
  static func named(_ name: String) -> ServeOption? {
    table.first { $0.name.utf8.elementsEqual(name.utf8) }
  }

  static var inFile: [ServeOption] { table.filter { $0.scope == .everywhere } }

  static let table: [ServeOption] = [
    ServeOption(
      name: "socket", value: .optionalInline("PATH"), scope: .commandLineOnly,
      help: """
        also listen on a Unix socket (default
        $XDG_RUNTIME_DIR/netmodel/netmodel.sock, else
        /tmp/netmodel-$UID/netmodel.sock); its folder
        must be yours alone (mode 0700 or 0755)
        """
    ) { (options, path) throws(ServeOptions.UsageError) in
      options.socketPath = path ?? ServeOptions.defaultSocketPath()
      options.socketPathGiven = path != nil
    },
    ServeOption(
      name: "no-stdio", value: .none, scope: .commandLineOnly, help: "serve the socket only", defaultText: "false"
    ) { (options, _) throws(ServeOptions.UsageError) in options.useStdio = false },
    ServeOption(
      name: "log-level", value: .text("LEVEL"),
      help: "debug, info (default), warn, error, off; logs go to stderr", defaultText: "info"
    ) { (options, text) throws(ServeOptions.UsageError) in
      guard let text, let level = Log.Level(name: text) else {
        throw .init(message: "--log-level must be debug, info, warn, error or off, not \(text ?? "")")
      }
      options.logLevel = level
    },
    ServeOption(
      name: "log-format", value: .text("FORMAT"),
      help: "text (default): a sentence and key=value fields; json: one object a line", defaultText: "text"
    ) { (options, text) throws(ServeOptions.UsageError) in
      guard let text, let format = LogFormat(rawValue: text) else {
        throw .init(message: "--log-format must be text or json, not \(text ?? "")")
      }
      options.logFormat = format
    },
    ServeOption(
      name: "max-message-bytes", value: .count("N"), help: "largest accepted message (default 16777216)",
      defaultText: "16777216"
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxMessageBytes = try count("max-message-bytes", text, minimum: 64)
    },
    ServeOption(
      name: "max-unread-bytes", value: .count("N"),
      help: """
        replies a peer may leave unread before the server
        stops reading its messages; also the most a batch's
        reply holds before the rest is refused, and the largest
        subscribe snapshot answered (default 8388608)
        """, defaultText: String(Connection.defaultMaxUnreadBytes)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxUnreadBytes = try count("max-unread-bytes", text, minimum: 1024)
    },
    ServeOption(
      name: "max-batch-elements", value: .count("N"), help: "longest batch accepted (default 10000)",
      defaultText: String(Connection.defaultMaxBatchElements)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxBatchElements = try count("max-batch-elements", text, minimum: 1)
    },
    ServeOption(
      name: "max-pending-requests", value: .count("N"),
      help: """
        requests of one peer that may wait for an answer
        before its messages are not read (default 10000)
        """, defaultText: String(Connection.defaultMaxPendingRequests)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxPendingRequests = try count("max-pending-requests", text, minimum: 1)
    },
    ServeOption(
      name: "shutdown-timeout-ms", value: .count("N"),
      help: """
        how long the final flush at exit waits for peers
        that do not read (default 3000)
        """, defaultText: "3000"
    ) { (options, text) throws(ServeOptions.UsageError) in
      guard let text, let ms = UInt64(text), ms <= 3_600_000 else {
        throw .init(
          message: "--shutdown-timeout-ms must be a number of milliseconds (at most 3600000), not \(text ?? "")")
      }
      options.shutdownTimeout = .milliseconds(ms)
    },
    ServeOption(
      name: "state-dir", value: .path("DIR"),
      help: """
        where state is kept (default $XDG_STATE_HOME/netmodel):
        journal.log (intents, the local backend's follows), versions;
        yours alone, as the socket's folder
        """
    ) { (options, path) throws(ServeOptions.UsageError) in options.stateDirectory = path },
    ServeOption(
      name: "max-age-ms", value: .count("N"),
      help: """
        how old a confirmed state may be and still answer
        getFollowState from memory (default 30000)
        """, defaultText: "30000"
    ) { (options, text) throws(ServeOptions.UsageError) in
      guard let text, let number = UInt64(text) else {
        throw .init(message: "--max-age-ms must be a number, not \(text ?? "")")
      }
      options.maxAgeMs = number
    },
    ServeOption(
      name: "when-exhausted", value: .text("MODE"),
      help: """
        rollback (default): a mutation whose retries ran out
        rolls back; queue: it stays pending until the backend answers
        """
    ) { (options, text) throws(ServeOptions.UsageError) in
      switch text ?? "" {
      case let mode where mode.utf8.elementsEqual("rollback".utf8): options.whenExhausted = .rollBack
      case let mode where mode.utf8.elementsEqual("queue".utf8): options.whenExhausted = .keepQueued
      case let other: throw .init(message: "--when-exhausted must be rollback or queue, not \(other)")
      }
    },
    ServeOption(
      name: "simulate", value: .text("SPEC"),
      help: """
        wrap the backend with delays and failures:
        latency=MS,jitter=MS,failure=RATE[,status=CODE]
        """
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.simulation = try SimulationSettings.parse(option: text ?? "")
    },
    ServeOption(name: "seed", value: .count("N"), help: "make --simulate and retry jitter reproducible") {
      (options, text) throws(ServeOptions.UsageError) in
      guard let text, let number = UInt64(text) else {
        throw .init(message: "--seed must be a non-negative integer, not \(text ?? "")")
      }
      options.seed = number
    },
    ServeOption(
      name: "backend", value: .text("local|rest"),
      help: """
        local (default): follows kept under the state folder;
        rest: an HTTP API described by --config
        """, defaultText: "local"
    ) { (options, text) throws(ServeOptions.UsageError) in
      switch text ?? "" {
      case let name where name.utf8.elementsEqual("local".utf8): options.backend = .local
      case let name where name.utf8.elementsEqual("rest".utf8): options.backend = .rest
      case let other: throw .init(message: "--backend must be local or rest, not \(other)")
      }
    },
    ServeOption(
      name: "config", value: .path("FILE"),
      help: """
        the REST configuration (schema/backend.schema.json);
        a bad file stops the server with exit code 2
        """
    ) { (options, path) throws(ServeOptions.UsageError) in options.configPath = path },
    ServeOption(
      name: "environment", value: .text("NAME"), help: "which of the configuration's base URLs to use"
    ) { (options, text) throws(ServeOptions.UsageError) in options.environment = text },
    ServeOption(
      name: "max-entities", value: .count("N"),
      help: """
        entities kept in memory beyond those something holds;
        the least recently used go first (default 100000)
        """, defaultText: String(EvictionPolicy.entities.maxCount)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.entityEviction.maxCount = try count("max-entities", text, minimum: 1)
    },
    ServeOption(
      name: "entity-idle-ms", value: .count("N"),
      help: """
        an entity nothing holds goes after this long unused
        (default 600000; 0: only the count evicts)
        """, defaultText: "600000"
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.entityEviction.idle = .milliseconds(try count("entity-idle-ms", text, minimum: 0))
    },
    ServeOption(
      name: "max-lists", value: .count("N"), help: "lists kept beyond those subscribed or loading (default 256)",
      defaultText: String(EvictionPolicy.lists.maxCount)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.listEviction.maxCount = try count("max-lists", text, minimum: 1)
    },
    ServeOption(
      name: "list-idle-ms", value: .count("N"),
      help: """
        a list nobody subscribes to goes after this long unused
        (default 600000; 0: only the count evicts)
        """, defaultText: "600000"
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.listEviction.idle = .milliseconds(try count("list-idle-ms", text, minimum: 0))
    },
    ServeOption(
      name: "max-held-bytes", value: .count("N"),
      help: """
        bytes of entity details and list items kept (an estimate);
        the least recently used that nothing holds go first; a list
        page larger than this fails (default 268435456; 0: no bound)
        """, defaultText: String(HeldBytes.defaultLimit)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxHeldBytes = try count("max-held-bytes", text, minimum: 0)
    },
    ServeOption(
      name: "max-warm-bytes", value: .count("N"),
      help: """
        bytes of the confirmed states kept in the state folder for
        a warm start, shown stale after a restart until asked again
        (default 4194304; 0: none kept nor read)
        """, defaultText: String(WarmStates.defaultMaxBytes)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxWarmBytes = try count("max-warm-bytes", text, minimum: 0)
    },
    ServeOption(
      name: "max-ledger-entries", value: .count("N"),
      help: """
        intents kept in the mutations ledger (getMutations), the
        oldest dropped first (default 10000)
        """, defaultText: String(MutationLedger.defaultMaxEntries)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxLedgerEntries = try count("max-ledger-entries", text, minimum: 1)
    },
    ServeOption(
      name: "max-ledger-bytes", value: .count("N"),
      help: """
        bytes of the mutations ledger's entries, as its file
        writes them, the oldest dropped first (default 4194304)
        """, defaultText: String(MutationLedger.defaultMaxBytes)
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxLedgerBytes = try count("max-ledger-bytes", text, minimum: 1024)
    },
    ServeOption(
      name: "max-api-calls-per-second", value: .count("N"),
      help: """
        rest backend: requests a second at most (default 200;
        0: no limit)
        """, defaultText: "200"
    ) { (options, text) throws(ServeOptions.UsageError) in
      options.maxAPICallsPerSecond = try count("max-api-calls-per-second", text, minimum: 0)
    },
    ServeOption(
      name: "config-file", value: .path("FILE"), scope: .commandLineOnly,
      help: """
        the serve options' file (default
        $XDG_CONFIG_HOME/netmodel/netmodel.json, else
        ~/.config/netmodel/netmodel.json; a missing default
        file is no error); the command line overrides it
        """
    ) { (_, _) throws(ServeOptions.UsageError) in },
    ServeOption(
      name: "print-config", value: .none, scope: .commandLineOnly,
      help: "print the options in force and where each came from, then exit", defaultText: "false"
    ) { (options, _) throws(ServeOptions.UsageError) in options.printConfig = true },
  ]

  /// `text` as a whole number ≥ `minimum`, or a message naming the option.
  static func count(_ name: String, _ text: String?, minimum: Int) throws(ServeOptions.UsageError) -> Int {
    guard let text, let number = Int(text), number >= minimum else {
      throw .init(message: "--\(name) must be a whole number ≥ \(minimum), not \(text ?? "")")
    }
    return number
  }

  /// The "Serve options:" part of `--help`: the name column is 28 wide, as the rest of it.
  static var usage: String {
    table.map { option in
      let lines = option.help.split(separator: "\n", omittingEmptySubsequences: false)
      let head = "    " + option.synopsis
      let indent = String(repeating: " ", count: 32)
      var text =
        head.count < 32
        ? head + String(repeating: " ", count: 32 - head.count) + lines[0]
        : head + "\n" + indent + lines[0]
      for line in lines.dropFirst() { text += "\n" + indent + line }
      return text
    }.joined(separator: "\n")
  }
}
