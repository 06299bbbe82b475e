import EventLoop
import HTTP
import JSON
import JSONRPC
import NetworkModels
import Posix
import Service

/// Runs the server until `exit`, a signal, or the end of stdin; returns the exit code.
func serve(_ options: ServeOptions) -> Int32 {
  Log.level = options.logLevel
  options.logFormat.install()
  // First, before any descriptor is opened: the variables go at once (see SocketActivation).
  let inherited: SocketActivation.Inherited?
  do {
    inherited = try SocketActivation.inherited()
  } catch {
    Log.error("refusing to start: \(error)")
    return 1
  }
  if let inherited, options.socketPathGiven, let path = options.socketPath, path != inherited.path {
    Log.error(
      "the service manager passed a socket bound to \(inherited.path), but --socket=\(path) names another; "
        + "make the .socket unit's ListenStream= and --socket say the same path, or give --socket without a path")
    return 2
  }
  do {
    let signals = try SignalFD(signals: [SignalFD.terminate, SignalFD.interrupt])
    let loop = try EventLoop()
    let server = RPCServer(
      loop: loop, maxMessageBytes: options.maxMessageBytes, maxUnreadBytes: options.maxUnreadBytes,
      maxBatchElements: options.maxBatchElements, maxPendingRequests: options.maxPendingRequests)
    server.shutdownTimeout = options.shutdownTimeout
    let folder = try StateFolder(stateDir: options.stateDirectory)
    do {
      // The outbox holds what clients asked for, tokens' effects included: a folder
      // someone else can write could have it swapped under us.
      try PrivateFolder.check(folder.path, role: "state folder", elsewhere: "--state-dir=DIR")
    } catch {
      Log.error("refusing to start: \(error)")
      return 1
    }
    let folderLock: FileDescriptor
    do {
      folderLock = try folder.lockExclusively()
    } catch let error as StateFolder.InUse {
      Log.error("\(error)")
      return 1
    }
    defer { folderLock.close() }
    var policy = RetryPolicy()
    var kindPolicies: [String: RetryPolicy] = [:]
    // One journal for the outbox and the local backend: one fsync per loop turn.
    let journal = try Journal(folder: folder)
    var backend: ModelBackend
    // Intents are kept per environment when the backend has environments.
    var environment: String?
    // What the states a warm start shows are true of (`WarmStateSaver`).
    var warmScope: () -> String = { "the local backend" }
    switch options.backend {
    case .local:
      backend = try LocalBackend(loop: loop, journal: journal)
    case .rest:
      let configuration: RESTConfiguration
      switch loadConfiguration(options.configPath ?? "") {
      case .success(let loaded):
        configuration = loaded
        for warning in loaded.warnings { Log.warn("\(options.configPath ?? "") at \(warning)") }
      case .failure(let error):
        Log.error("\(error)")
        return 2
      }
      // Opened here, not at start: the local backend never needs libcurl.
      do {
        try HTTPClient.loadLibcurl()
      } catch {
        Log.error("\(error); not started")
        return 2
      }
      let rest = RESTBackend(configuration: configuration, loop: loop)
      if let problem = rest.session.tokenProblem {
        Log.error("\(problem); not started")
        return 2
      }
      if let source = rest.session.tokenSource {
        Log.event(.info, "token.source", "the auth token was read at start", [.init("source", source)])
      } else if configuration.auth != nil {
        Log.event(
          .info, "token.none", "no auth token at start (until configure sets one)",
          [.init("looked", rest.session.tokenNotes.joined(separator: "; "))])
      }
      // Values captured from answers (YouTube's subscription ids) outlive the process:
      // an unfollow after a restart needs what the follow answered.
      rest.session.capturedValues = try CapturedValues(folder: folder)
      if let environment = options.environment, !rest.session.selectEnvironment(environment) {
        Log.error(
          "--environment \(environment): the configuration has \(rest.session.environmentNames.joined(separator: ", "))"
        )
        return 2
      }
      environment = rest.session.environment
      warmScope = { [unowned rest] in "rest " + rest.session.warmStatesScope }
      rest.session.http.maxRequestsPerSecond = options.maxAPICallsPerSecond
      policy = configuration.retry
      for (kind, endpoints) in configuration.kinds { if let retry = endpoints.retry { kindPolicies[kind] = retry } }
      backend = rest
    }
    if let whenExhausted = options.whenExhausted {
      policy.whenExhausted = whenExhausted
      for kind in kindPolicies.keys { kindPolicies[kind]?.whenExhausted = whenExhausted }
    }
    let outbox = try Outbox(journal: journal, environment: environment)
    let seed = options.seed ?? Process.monotonicNanoseconds()
    if let simulation = options.simulation {
      backend = SimulatedBackend(wrapping: backend, loop: loop, settings: simulation, seed: simulation.seed ?? seed)
    }
    let store = FollowStore(
      loop: loop, backend: backend, policy: policy, intentLog: outbox,
      seed: seed)
    store.kindPolicies = kindPolicies
    store.eviction = options.entityEviction
    store.heldBytes.limit = options.maxHeldBytes
    store.versions = try VersionBase(folder: folder)
    // Before the outbox's intents: a state an intent is pending for shows the intent.
    let warm =
      options.maxWarmBytes > 0
      ? WarmStateSaver(store: store, folder: folder, maxBytes: options.maxWarmBytes, scope: warmScope) : nil
    warm?.start()
    var configuration = NetmodelService.Configuration()
    configuration.defaultMaxAgeMs = options.maxAgeMs
    configuration.listEviction = options.listEviction
    let ledger: MutationLedger
    do {
      ledger = try MutationLedger(
        folder: folder, maxEntries: options.maxLedgerEntries, maxBytes: options.maxLedgerBytes)
    } catch {
      // What only informs must not keep the follows from being served.
      Log.error("\(folder.file(MutationLedger.fileName)): \(error); the mutations ledger is kept in memory only")
      ledger = MutationLedger(maxEntries: options.maxLedgerEntries, maxBytes: options.maxLedgerBytes)
    }
    let service = NetmodelService(
      server: server, store: store, outbox: outbox, ledger: ledger, configuration: configuration)
    store.replayIntents()
    ledger.settleLost(outbox)

    _ = try loop.register(signals.fd, events: .readable) { _ in
      while let signal = signals.next() {
        Log.info("signal \(signal): shutting down")
        service.terminate(exitCode: 0)
      }
    }
    if let inherited {
      try server.listen(inherited: inherited)
    } else if let path = options.socketPath {
      do {
        try server.listen(path: path)
      } catch {
        Log.error("\(error)")
        return 1
      }
    }
    if options.useStdio {
      server.onStdioEnded = { service.terminate(exitCode: 0) }
      try server.attachStdio()
    }
    try loop.run()
    server.shutDown(answeringPending: .shuttingDown)
    service.models.commitIntents()
    warm?.stop()
    service.models.writeSummedLogLines()
    // A clean stop leaves a compact journal, so the next start reads the state only.
    if !journal.isCompact {
      do { try journal.compact() } catch { Log.warn("could not compact the journal: \(error)") }
    }
    service.ledger.commit()
    service.ledger.compactIfNeeded()
    return service.exitCode ?? 0
  } catch {
    Log.error("\(error)")
    return 1
  }
}

/// Reads and checks a REST configuration file; the error names the file and the field.
func loadConfiguration(_ path: String) -> Result<RESTConfiguration, ConfigurationFileError> {
  let bytes: [UInt8]
  do {
    let file = try ConfigurationFile.read(path, role: "the REST configuration")
    bytes = file.bytes
    if let warning = file.warning { Log.warn(warning) }
  } catch {
    switch error {
    case .unreadable(let error): return .failure(ConfigurationFileError(message: "\(path): cannot read: \(error)"))
    case .unsafe(let text): return .failure(ConfigurationFileError(message: text))
    }
  }
  do {
    var configuration = try bytes.withUnsafeBytes { bytes in
      Result { () throws(RESTConfigurationError) in try RESTConfiguration.parse(utf8: bytes) }
    }.get()
    configuration.folder = FileSystem.parentFolder(of: path)
    return .success(configuration)
  } catch {
    return .failure(
      ConfigurationFileError(message: "\(path)\(error.path.isEmpty ? "" : " at \(error.path)"): \(error.reason)"))
  }
}

struct ConfigurationFileError: Error, CustomStringConvertible {
  let message: String
  var description: String { message }
}

/// `netmodel check-config FILE`: what the server would say about the file at start. A
/// file with a member only a REST configuration has is one; any other is a netmodel.json
/// (serve options), checked with the REST configuration it names.
func runCheckConfig(_ arguments: ArraySlice<String>) -> Int32 {
  guard arguments.count == 1, let path = arguments.first, !path.hasPrefix("-") else {
    let help = arguments.first == "--help" || arguments.first == "-h"
    try? (help ? FileDescriptor.standardOutput : FileDescriptor.standardError).writeAll(
      """
      usage: netmodel check-config FILE
      Checks a REST backend configuration (schema/backend.schema.json), or a netmodel.json
      of serve options (schema/serve-config.schema.json) and the configuration it names.

      """)
    return help ? 0 : 2
  }
  if isServeConfiguration(path) { return checkServeConfiguration(path) }
  return checkRESTConfiguration(path)
}

/// Whether the file is a JSON object with none of the members only a REST configuration
/// has (`environment` is both's); a broken REST configuration without `environments`
/// is still told by its `auth` or `retry`. Anything unreadable is left to the REST
/// check, whose messages say why.
func isServeConfiguration(_ path: String) -> Bool {
  guard let bytes = try? FileSystem.readFile(path, atMost: ConfigurationFile.maxBytes),
    let root = try? JSON.parse(bytes), root.isObject
  else {
    return false
  }
  let restOnly = [
    "environments", "auth", "headers", "timeoutMs", "connectTimeoutMs", "maxInFlight", "retry", "kinds", "lists",
    "rateLimit", "values",
  ]
  return !root.members.contains { member in restOnly.contains { $0.utf8.elementsEqual(member.key.utf8) } }
}

func checkServeConfiguration(_ path: String) -> Int32 {
  let options: ServeOptions
  do {
    options = try ServeOptions.load(arguments: ["--config-file", path])
  } catch {
    try? FileDescriptor.standardError.writeAll("netmodel: \(error.message)\n")
    return 2
  }
  let named = options.given.filter {
    guard case .file = $0.origin else { return false }
    return true
  }.count
  try? FileDescriptor.standardOutput.writeAll(
    "\(path): ok — serve options: \(named), backend \(options.backend.rawValue)\n")
  guard options.backend == .rest, let config = options.configPath else { return 0 }
  return checkRESTConfiguration(config)
}

func checkRESTConfiguration(_ path: String) -> Int32 {
  switch loadConfiguration(path) {
  case .success(let configuration):
    for warning in configuration.warnings {
      try? FileDescriptor.standardError.writeAll("netmodel: warning: \(path) at \(warning)\n")
    }
    let token: String
    switch AuthTokenSources.resolve(configuration.auth, folder: configuration.folder, environment: Process.environment)
    {
    case .token(_, let source): token = "; auth token from \(source)"
    case .none(let notes): token = configuration.auth == nil ? "" : "; no auth token (\(notes.joined(separator: "; ")))"
    case .refused(let problem):
      try? FileDescriptor.standardError.writeAll("netmodel: \(path): \(problem)\n")
      return 2
    }
    let kinds = configuration.kinds.keys.sorted().joined(separator: ", ")
    let environments = configuration.environments.map(\.name).joined(separator: ", ")
    try? FileDescriptor.standardOutput.writeAll(
      EscapedText.line(
        "\(path): ok — kinds: \(kinds); environments: \(environments) (default \(configuration.defaultEnvironment))"
          + token) + "\n")
    return 0
  case .failure(let error):
    try? FileDescriptor.standardError.writeAll("netmodel: \(error)\n")
    return 2
  }
}
