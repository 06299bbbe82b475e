import EventLoop
import JSON
import JSONRPC
import NetworkModels
import Posix

extension NetmodelService {
  /// The counters as the `Stats` schema in schema/openrpc.json describes them.
  func statsResult() -> JSON {
    let stats = server.statistics
    let (seconds, attoseconds) = (MonotonicClock().now - stats.startedAt).components
    let uptimeMs = seconds * 1000 + attoseconds / 1_000_000_000_000_000
    let byMethod = JSON.object()
    for (method, count) in stats.requestsByMethod.sorted(by: { $0.key < $1.key }) {
      byMethod.set(method, .integer(count))
    }
    let byCode = JSON.object()
    for (code, count) in stats.errorsByCode.sorted(by: { $0.key < $1.key }) {
      byCode.set(String(code), .integer(count))
    }
    let counters = store.counters
    let backend = JSON.object()
      .set("calls", .integer(counters.backendCalls))
      .set("mutations", .integer(counters.backendMutations))
      .set("reads", .integer(counters.backendReads))
      .set("retries", .integer(counters.retries))
      .set("rollbacks", .integer(counters.rollbacks))
    let notifications = JSON.object()
      .set("sent", .integer(subscriptions.counters.notificationsSent))
      .set("coalesced", .integer(subscriptions.counters.coalesced))
      .set("stats", .integer(subscriptions.counters.statsSent))
    if let figures = models.statistics?.httpStatistics {
      let http = figures.counters
      let calls = JSON.object()
      for (endpoint, count) in figures.callsByEndpoint.sorted(by: { $0.key < $1.key }) {
        calls.set(endpoint, .integer(count))
      }
      let endpoints = JSON.object()
      for (endpoint, figures) in figures.endpoints.sorted(by: { $0.key < $1.key }) {
        endpoints.set(
          endpoint,
          JSON.object()
            .set("inFlight", .integer(figures.inFlight))
            .set("finished", .integer(figures.finished))
            .set("latencyTotalMs", .integer(Self.milliseconds(figures.latencyTotal)))
            .set("latencyLastMs", .integer(Self.milliseconds(figures.latencyLast))))
      }
      backend.set(
        "http",
        JSON.object()
          .set("requests", .integer(http.requests))
          .set("responses", .integer(http.responses))
          .set("transportErrors", .integer(http.transportErrors))
          .set("connectionsOpened", .integer(http.connectionsOpened))
          .set("inFlight", .integer(figures.inFlight))
          .set("byEndpoint", calls)
          .set("endpoints", endpoints))
    }
    let listCounters = lists.counters
    let preload = preloader.counters
    return JSON.object()
      .set("instance", .string(instance))
      .set("uptimeMs", .integer(Int64(uptimeMs)))
      .set(
        "lists",
        JSON.object()
          .set("held", .integer(lists.listCount))
          .set("pageCalls", .integer(listCounters.pageCalls))
          .set("sharedFetches", .integer(listCounters.sharedFetches))
          .set("invalidations", .integer(listCounters.invalidations))
          .set("evicted", .integer(listCounters.evicted))
          .set("pagingFailures", .integer(listCounters.pagingFailures))
      )
      .set(
        "preload",
        JSON.object()
          .set("queued", .integer(preloader.queuedCount))
          .set("inFlight", .integer(preloader.inFlightCount))
          .set("started", .integer(preload.started))
          .set("cancelled", .integer(preload.cancelled))
          .set("detailCalls", .integer(preload.detailCalls))
          .set("detailShared", .integer(preload.detailShared))
      )
      .set("backend", backend)
      .set("dedupeHits", .integer(counters.dedupeHits))
      .set("cacheHits", .integer(counters.cacheHits))
      .set("entities", .integer(store.entityCount))
      .set("entitiesEvicted", .integer(counters.evicted))
      .set("entitiesPending", .integer(store.pendingCount))
      .set("entitiesFailed", .integer(store.failedCount))
      .set("subscriptions", .integer(subscriptions.subscriptionCount))
      .set("notifications", notifications)
      .set("outbox", .integer(outbox?.count ?? 0))
      .set("waitingForCredentials", .integer(Int64(store.waitingForCredentialsCount)))
      .set("residentMemoryBytes", .integer(Process.residentMemoryBytes()))
      .set(
        "connections",
        JSON.object().set("open", .integer(stats.connectionsOpen)).set("total", .integer(stats.connectionsTotal))
          .set("list", connectionList())
      )
      .set("requests", JSON.object().set("total", .integer(stats.requestsTotal)).set("byMethod", byMethod))
      .set("notificationsReceived", .integer(stats.notificationsReceived))
      .set("bytes", JSON.object().set("in", .integer(stats.bytesIn)).set("out", .integer(stats.bytesOut)))
      .set("errors", JSON.object().set("total", .integer(stats.errorsTotal)).set("byCode", byCode))
  }

  /// Each open connection, oldest first: who subscribes to what, and who reads slowly.
  private func connectionList() -> JSON {
    let list = JSON.array()
    for connection in server.connections.values.sorted(by: { $0.id < $1.id }) {
      let (subscriptionCount, queued) = subscriptions.figures(of: connection.id)
      list.append(
        JSON.object()
          .set("id", .integer(connection.id))
          .set("transport", .string(connection.transport == .stdio ? "stdio" : "socket"))
          .set("subscriptions", .integer(subscriptionCount))
          .set("queued", .integer(queued))
          .set("unsentBytes", .integer(connection.unsentByteCount)))
    }
    return list
  }

  static func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
  }
}
