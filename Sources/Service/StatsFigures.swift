import JSON
import JSONRPC

/// The `Stats` object of schema/openrpc.json as a value: what `stats` answers and a
/// `statsChanged` notification carries. Written through a jansson tree, member by
/// member in the schema's order, so its bytes are jansson's.
struct StatsFigures: EncodableResult {
  struct Lists {
    var held: Int64, pageCalls: Int64, sharedFetches: Int64, invalidations: Int64, evicted: Int64
    var pagingFailures: Int64
  }

  struct Preload {
    var queued: Int64, inFlight: Int64, started: Int64, cancelled: Int64, detailCalls: Int64, detailShared: Int64
  }

  struct Endpoint {
    var inFlight: Int64, finished: Int64, latencyTotalMs: Int64, latencyLastMs: Int64
  }

  struct HTTP {
    var requests: Int64, responses: Int64, transportErrors: Int64, connectionsOpened: Int64, inFlight: Int64
    /// `loop` or `own`: where libcurl runs now.
    var libcurlThread: String
    var libcurlMoves: Int64
    /// By endpoint name, sorted.
    var byEndpoint: [(String, Int64)]
    var endpoints: [(String, Endpoint)]
  }

  struct Backend {
    var calls: Int64, mutations: Int64, reads: Int64, retries: Int64, rollbacks: Int64
    var http: HTTP?
  }

  struct Notifications {
    var sent: Int64, coalesced: Int64, stats: Int64
  }

  /// The mutations ledger (`getMutations`).
  struct Mutations {
    var entries: Int64, open: Int64, failed: Int64, lastSeq: Int64, dropped: Int64, bytes: Int64
    var maxEntries: Int64, maxBytes: Int64
  }

  struct Connection {
    var id: Int64
    var transport: String
    var subscriptions: Int64, queued: Int64, unsentBytes: Int64
  }

  var instance: String
  var uptimeMs: Int64
  var lists: Lists
  var preload: Preload
  var backend: Backend
  var dedupeHits: Int64, cacheHits: Int64
  var entities: Int64, entitiesEvicted: Int64, entitiesPending: Int64, entitiesFailed: Int64
  var subscriptions: Int64
  var notifications: Notifications
  var outbox: Int64
  var mutations: Mutations
  var waitingForCredentials: Int64
  var residentMemoryBytes: Int64
  var heldBytes: Int64, maxHeldBytes: Int64
  var connectionsOpen: Int64, connectionsTotal: Int64
  /// Oldest first.
  var connections: [Connection]
  var requestsTotal: Int64
  /// By method name, sorted.
  var requestsByMethod: [(String, Int64)]
  var notificationsReceived: Int64
  var bytesIn: Int64, bytesOut: Int64
  var errorsTotal: Int64
  /// By code, sorted by number.
  var errorsByCode: [(String, Int64)]

  /// The figures without those that every push changes by itself: time passes,
  /// memory moves, and the pushes themselves are bytes and notifications. None of
  /// these is news to a watcher on its own; nor is an `inspect` (`netmodel top` asks
  /// one every second: each would be a push, and the next push's answer another).
  var withoutDrift: StatsFigures {
    var figures = self
    figures.uptimeMs = 0
    figures.residentMemoryBytes = 0
    figures.bytesOut = 0
    figures.bytesIn = 0
    if let index = figures.requestsByMethod.firstIndex(where: { $0.0 == Inspect.name }) {
      figures.requestsTotal -= figures.requestsByMethod[index].1
      figures.requestsByMethod.remove(at: index)
    }
    figures.notifications.stats = 0
    for index in figures.connections.indices { figures.connections[index].unsentBytes = 0 }
    return figures
  }

  func encode(into buffer: inout [UInt8]) { json.encode(into: &buffer) }

  var json: JSON {
    func object(_ pairs: [(String, Int64)]) -> JSON {
      let object = JSON.object()
      for (name, count) in pairs { object.set(name, .integer(count)) }
      return object
    }
    let backend = JSON.object()
      .set("calls", .integer(self.backend.calls))
      .set("mutations", .integer(self.backend.mutations))
      .set("reads", .integer(self.backend.reads))
      .set("retries", .integer(self.backend.retries))
      .set("rollbacks", .integer(self.backend.rollbacks))
    if let http = self.backend.http {
      let endpoints = JSON.object()
      for (name, figures) in http.endpoints {
        endpoints.set(
          name,
          JSON.object()
            .set("inFlight", .integer(figures.inFlight))
            .set("finished", .integer(figures.finished))
            .set("latencyTotalMs", .integer(figures.latencyTotalMs))
            .set("latencyLastMs", .integer(figures.latencyLastMs)))
      }
      backend.set(
        "http",
        JSON.object()
          .set("requests", .integer(http.requests))
          .set("responses", .integer(http.responses))
          .set("transportErrors", .integer(http.transportErrors))
          .set("connectionsOpened", .integer(http.connectionsOpened))
          .set("inFlight", .integer(http.inFlight))
          .set("libcurlThread", .string(http.libcurlThread))
          .set("libcurlMoves", .integer(http.libcurlMoves))
          .set("byEndpoint", object(http.byEndpoint))
          .set("endpoints", endpoints))
    }
    let connectionList = JSON.array()
    for connection in connections {
      connectionList.append(
        JSON.object()
          .set("id", .integer(connection.id))
          .set("transport", .string(connection.transport))
          .set("subscriptions", .integer(connection.subscriptions))
          .set("queued", .integer(connection.queued))
          .set("unsentBytes", .integer(connection.unsentBytes)))
    }
    return JSON.object()
      .set("instance", .string(instance))
      .set("uptimeMs", .integer(uptimeMs))
      .set(
        "lists",
        JSON.object()
          .set("held", .integer(lists.held))
          .set("pageCalls", .integer(lists.pageCalls))
          .set("sharedFetches", .integer(lists.sharedFetches))
          .set("invalidations", .integer(lists.invalidations))
          .set("evicted", .integer(lists.evicted))
          .set("pagingFailures", .integer(lists.pagingFailures))
      )
      .set(
        "preload",
        JSON.object()
          .set("queued", .integer(preload.queued))
          .set("inFlight", .integer(preload.inFlight))
          .set("started", .integer(preload.started))
          .set("cancelled", .integer(preload.cancelled))
          .set("detailCalls", .integer(preload.detailCalls))
          .set("detailShared", .integer(preload.detailShared))
      )
      .set("backend", backend)
      .set("dedupeHits", .integer(dedupeHits))
      .set("cacheHits", .integer(cacheHits))
      .set("entities", .integer(entities))
      .set("entitiesEvicted", .integer(entitiesEvicted))
      .set("entitiesPending", .integer(entitiesPending))
      .set("entitiesFailed", .integer(entitiesFailed))
      .set("subscriptions", .integer(subscriptions))
      .set(
        "notifications",
        JSON.object()
          .set("sent", .integer(notifications.sent))
          .set("coalesced", .integer(notifications.coalesced))
          .set("stats", .integer(notifications.stats))
      )
      .set("outbox", .integer(outbox))
      .set(
        "mutations",
        JSON.object()
          .set("entries", .integer(mutations.entries))
          .set("open", .integer(mutations.open))
          .set("failed", .integer(mutations.failed))
          .set("lastSeq", .integer(mutations.lastSeq))
          .set("dropped", .integer(mutations.dropped))
          .set("bytes", .integer(mutations.bytes))
          .set("maxEntries", .integer(mutations.maxEntries))
          .set("maxBytes", .integer(mutations.maxBytes))
      )
      .set("waitingForCredentials", .integer(waitingForCredentials))
      .set("residentMemoryBytes", .integer(residentMemoryBytes))
      .set("heldBytes", .integer(heldBytes))
      .set("maxHeldBytes", .integer(maxHeldBytes))
      .set(
        "connections",
        JSON.object().set("open", .integer(connectionsOpen)).set("total", .integer(connectionsTotal))
          .set("list", connectionList)
      )
      .set("requests", JSON.object().set("total", .integer(requestsTotal)).set("byMethod", object(requestsByMethod)))
      .set("notificationsReceived", .integer(notificationsReceived))
      .set("bytes", JSON.object().set("in", .integer(bytesIn)).set("out", .integer(bytesOut)))
      .set("errors", JSON.object().set("total", .integer(errorsTotal)).set("byCode", object(errorsByCode)))
  }
}
