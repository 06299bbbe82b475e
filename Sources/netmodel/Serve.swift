import EventLoop
import JSONRPC
import NetworkModels
import Posix
import Service

/// Runs the server until `exit`, a signal, or the end of stdin; returns the exit code.
func serve(_ options: ServeOptions) -> Int32 {
  Log.level = options.logLevel
  do {
    let signals = try SignalFD(signals: [SignalFD.terminate, SignalFD.interrupt])
    let loop = try EventLoop()
    let server = RPCServer(loop: loop, maxMessageBytes: options.maxMessageBytes)
    let folder = try StateFolder(stateDir: options.stateDirectory)
    let folderLock: FileDescriptor
    do {
      folderLock = try folder.lockExclusively()
    } catch let error as StateFolder.InUse {
      Log.error("\(error)")
      return 1
    }
    defer { folderLock.close() }
    let outbox = try Outbox(loop: loop, folder: folder)
    let local = try LocalBackend(loop: loop, folder: folder)
    var backend: FollowBackend = local
    let seed = options.seed ?? Process.monotonicNanoseconds()
    if let simulation = options.simulation {
      backend = SimulatedBackend(wrapping: backend, loop: loop, settings: simulation, seed: simulation.seed ?? seed)
    }
    let store = FollowStore(
      loop: loop, backend: backend, policy: RetryPolicy(whenExhausted: options.whenExhausted), intentLog: outbox,
      seed: seed)
    var configuration = NetmodelService.Configuration()
    configuration.defaultMaxAgeMs = options.maxAgeMs
    let service = NetmodelService(server: server, store: store, outbox: outbox, configuration: configuration)
    store.replayIntents()

    _ = try loop.register(signals.fd, events: .readable) { _ in
      while let signal = signals.next() {
        Log.info("signal \(signal): shutting down")
        service.terminate(exitCode: 0)
      }
    }
    if let path = options.socketPath {
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
    server.shutDown()
    if outbox.needsCommit { outbox.commit() }
    // A clean stop leaves everything in the snapshot, so the next start reads one file.
    do { try local.compact() } catch { Log.warn("could not compact the local follows: \(error)") }
    return service.exitCode ?? 0
  } catch {
    Log.error("\(error)")
    return 1
  }
}
