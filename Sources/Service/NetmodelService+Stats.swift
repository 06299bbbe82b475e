import EventLoop
import JSON
import JSONRPC
import NetworkModels
import Posix

extension NetmodelService {
  /// The counters as the `Stats` schema in schema/openrpc.json describes them.
  func statsResult() -> StatsFigures {
    let stats = server.statistics
    let figures = models.figures
    let counters = figures.store
    let listCounters = figures.lists
    let preload = figures.preload
    var http: StatsFigures.HTTP?
    if let figures = figures.http {
      let counts = figures.counters
      http = StatsFigures.HTTP(
        requests: Int64(counts.requests), responses: Int64(counts.responses),
        transportErrors: Int64(counts.transportErrors), connectionsOpened: Int64(counts.connectionsOpened),
        inFlight: Int64(figures.inFlight),
        libcurlThread: figures.libcurlOnItsThread ? "own" : "loop", libcurlMoves: Int64(figures.libcurlMoves),
        byEndpoint: figures.callsByEndpoint.sorted(by: { $0.key < $1.key }).map { ($0.key, Int64($0.value)) },
        endpoints: figures.endpoints.sorted(by: { $0.key < $1.key }).map { name, endpoint in
          (
            name,
            StatsFigures.Endpoint(
              inFlight: Int64(endpoint.inFlight), finished: Int64(endpoint.finished),
              latencyTotalMs: Self.milliseconds(endpoint.latencyTotal),
              latencyLastMs: Self.milliseconds(endpoint.latencyLast))
          )
        })
    }
    return StatsFigures(
      instance: instance,
      uptimeMs: uptimeMs,
      lists: StatsFigures.Lists(
        held: Int64(figures.listsHeld), pageCalls: Int64(listCounters.pageCalls),
        sharedFetches: Int64(listCounters.sharedFetches), invalidations: Int64(listCounters.invalidations),
        evicted: Int64(listCounters.evicted), pagingFailures: Int64(listCounters.pagingFailures)),
      preload: StatsFigures.Preload(
        queued: Int64(figures.preloadQueued), inFlight: Int64(figures.preloadInFlight),
        started: Int64(preload.started), cancelled: Int64(preload.cancelled), detailCalls: Int64(preload.detailCalls),
        detailShared: Int64(preload.detailShared)),
      backend: StatsFigures.Backend(
        calls: Int64(counters.backendCalls), mutations: Int64(counters.backendMutations),
        reads: Int64(counters.backendReads), retries: Int64(counters.retries), rollbacks: Int64(counters.rollbacks),
        http: http),
      dedupeHits: Int64(counters.dedupeHits), cacheHits: Int64(counters.cacheHits),
      entities: Int64(figures.entities), entitiesEvicted: Int64(counters.evicted),
      entitiesPending: Int64(figures.entitiesPending), entitiesFailed: Int64(figures.entitiesFailed),
      subscriptions: Int64(subscriptions.subscriptionCount),
      notifications: StatsFigures.Notifications(
        sent: Int64(subscriptions.counters.notificationsSent), coalesced: Int64(subscriptions.counters.coalesced),
        stats: Int64(subscriptions.counters.statsSent)),
      outbox: Int64(figures.outbox),
      mutations: StatsFigures.Mutations(
        entries: Int64(ledger.count), open: Int64(ledger.openCount), failed: Int64(ledger.failedCount),
        lastSeq: Int64(ledger.lastSeq), dropped: Int64(ledger.dropped), bytes: Int64(ledger.bytes),
        maxEntries: Int64(ledger.maxEntries), maxBytes: Int64(ledger.maxBytes)),
      waitingForCredentials: Int64(figures.waitingForCredentials),
      residentMemoryBytes: Int64(Process.residentMemoryBytes()),
      heldBytes: Int64(figures.heldBytes), maxHeldBytes: Int64(figures.maxHeldBytes),
      connectionsOpen: Int64(stats.connectionsOpen), connectionsTotal: Int64(stats.connectionsTotal),
      connections: connectionList(),
      requestsTotal: Int64(stats.requestsTotal),
      requestsByMethod: stats.requestsByMethod.sorted(by: { $0.key < $1.key }).map { ($0.key, Int64($0.value)) },
      notificationsReceived: Int64(stats.notificationsReceived),
      bytesIn: Int64(stats.bytesIn), bytesOut: Int64(stats.bytesOut),
      errorsTotal: Int64(stats.errorsTotal),
      errorsByCode: stats.errorsByCode.sorted(by: { $0.key < $1.key }).map { (String($0.key), Int64($0.value)) })
  }

  /// Since the process started, on the monotonic clock.
  var uptimeMs: Int64 { Self.milliseconds(MonotonicClock().now - server.statistics.startedAt) }

  /// Each open connection, oldest first: who subscribes to what, and who reads slowly.
  private func connectionList() -> [StatsFigures.Connection] {
    server.connections.values.sorted(by: { $0.id < $1.id }).map { connection in
      let (subscriptionCount, queued) = subscriptions.figures(of: connection.id)
      return StatsFigures.Connection(
        id: Int64(connection.id), transport: connection.transport == .stdio ? "stdio" : "socket",
        subscriptions: Int64(subscriptionCount), queued: Int64(queued), unsentBytes: Int64(connection.unsentByteCount))
    }
  }

  static func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
  }
}
