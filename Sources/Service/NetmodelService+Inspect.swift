import EventLoop
import HTTP
import JSON
import JSONRPC
import NetworkModels
import Posix

/// The `InspectResult` of schema/openrpc.json, written through a jansson tree.
struct InspectReport: EncodableResult {
  let json: JSON
  func encode(into buffer: inout [UInt8]) { json.encode(into: &buffer) }
}

extension NetmodelService {
  /// What each section of `inspect` asked for shows: the models', the HTTP client's and
  /// the connections' plain values, encoded here. Times are given twice: milliseconds
  /// from now on the monotonic clock (`…Ms`), and the wall-clock time (RFC 3339, UTC)
  /// a person reads.
  func inspectReport(_ params: Inspect.Params) -> InspectReport {
    let now = loop.clock.now
    let wallNowMs = Int64((Process.wallClockSeconds() * 1000).rounded())
    let times = InspectTimes(now: now, wallNowMs: wallNowMs)
    let report = JSON.object()
      .set("instance", .string(instance))
      .set("uptimeMs", .integer(uptimeMs))
      .set("now", .string(RFC3339.milliseconds(since1970: wallNowMs)))
      .set("limit", .integer(params.limit))
    for section in params.sections {
      switch section {
      case .connections: report.set("connections", inspectedConnections(params.limit))
      case .entities:
        report.set(
          "entities", times.entities(models.inspectEntities(kind: params.kind, id: params.id, limit: params.limit)))
      case .outbox: report.set("outbox", times.intents(models.inspectIntents(kind: params.kind, limit: params.limit)))
      case .lists: report.set("lists", times.lists(models.inspectLists(limit: params.limit)))
      case .holds: report.set("holds", times.holds(models.inspectHolds(limit: params.limit)))
      }
    }
    return InspectReport(json: report)
  }

  /// Open connections, oldest first: who (initialize's clientInfo.name), over what,
  /// their subscriptions' topics and what waits to be written to them.
  private func inspectedConnections(_ limit: Int) -> JSON {
    let connections = server.connections.values.sorted(by: { $0.id < $1.id })
    let list = JSON.array()
    for connection in connections.prefix(limit) {
      let (_, queued) = subscriptions.figures(of: connection.id)
      let subscriptionList = JSON.array()
      for (id, topics) in subscriptions.subscriptions(of: connection.id) {
        let topicList = JSON.array()
        for topic in topics.prefix(InspectTimes.topicsShown) { topicList.append(.string(topic.shorthand)) }
        subscriptionList.append(
          JSON.object().set("subscription", .string(id)).set("topicCount", .integer(topics.count))
            .set("topics", topicList))
      }
      list.append(
        JSON.object()
          .set("id", .integer(connection.id))
          .set("transport", .string(connection.transport == .stdio ? "stdio" : "socket"))
          .set("client", connection.clientName.map { JSON.string($0) } ?? .null())
          .set("subscriptions", subscriptionList)
          .set("queued", .integer(queued))
          .set("unsentBytes", .integer(connection.unsentByteCount)))
    }
    return InspectTimes.section(total: connections.count, shown: connections.prefix(limit).count, list)
  }
}

/// Encodes the models' inspection, times relative to `now` and on the wall clock.
struct InspectTimes {
  /// Topics listed per subscription (`topicCount` says how many it has).
  static let topicsShown = 10

  let now: LoopInstant
  let wallNowMs: Int64

  static func section(total: Int, shown: Int, _ list: JSON) -> JSON {
    JSON.object().set("total", .integer(total)).set("omitted", .integer(total - shown)).set("list", list)
  }

  /// `{name}Ms` (how long ago, ms) and `{name}` (wall clock), or both null.
  private func since(_ instant: LoopInstant?, _ name: String, into object: JSON) {
    guard let instant else {
      object.set(name + "Ms", .null()).set(name, .null())
      return
    }
    let ago = instant < now ? NetmodelService.milliseconds(now - instant) : 0
    object.set(name + "Ms", .integer(ago))
      .set(name, .string(RFC3339.milliseconds(since1970: wallNowMs - ago)))
  }

  private func error(_ failure: FollowFailure?) -> JSON {
    guard let failure else { return .null() }
    let object = JSON.object().set("code", .integer(failure.errorCode.rawValue)).set(
      "message", .string(failure.message)
    )
    .set("retryable", .bool(failure.isRetryable))
    if let wait = failure.retryAfter, wait > .zero {
      object.set("retryAfterMs", .integer(NetmodelService.milliseconds(wait)))
    }
    return object
  }

  func entities(_ section: ModelInspection.Entities) -> JSON {
    let list = JSON.array()
    for entity in section.items {
      let states = JSON.array()
      if entity.pending { states.append(.string("pending")) }
      if entity.reading { states.append(.string("reading")) }
      if entity.retrying { states.append(.string("retrying")) }
      if entity.error != nil { states.append(.string("failed")) }
      if entity.requested { states.append(.string("requested")) }
      if entity.waitingForCredentials { states.append(.string("waitingForCredentials")) }
      let object = JSON.object()
        .set("kind", .string(entity.key.kind))
        .set("id", .string(entity.key.id))
        .set("states", states)
        .set("following", entity.following.map { JSON.bool($0) } ?? .null())
        .set("confirmed", entity.confirmed.map { JSON.bool($0) } ?? .null())
        .set("attempts", .integer(entity.attempts))
      since(entity.since, "since", into: object)
      list.append(object.set("error", error(entity.error)))
    }
    return Self.section(total: section.total, shown: section.items.count, list)
  }

  func intents(_ section: ModelInspection.Intents) -> JSON {
    let list = JSON.array()
    for intent in section.items {
      let object = JSON.object()
        .set("kind", .string(intent.key.kind))
        .set("id", .string(intent.key.id))
        .set("wanted", .bool(intent.wanted))
        .set("environment", intent.environment.map { JSON.string($0) } ?? .null())
        .set("active", .bool(intent.active))
        .set("attempts", .integer(intent.attempts))
      since(intent.since, "since", into: object)
      list.append(object.set("error", error(intent.error)))
    }
    return Self.section(total: section.total, shown: section.items.count, list)
  }

  func lists(_ section: ModelInspection.Lists) -> JSON {
    let list = JSON.array()
    for entry in section.items {
      let params = (try? JSON.parse(entry.key.paramsText)) ?? .object()
      let object = JSON.object()
        .set("list", .string(entry.key.name))
        .set("params", params)
        .set("phase", .string(entry.phase.rawValue))
        .set("items", .integer(entry.items))
        .set("pages", .integer(entry.pages))
        .set("hasMore", .bool(entry.hasMore))
        .set("stale", .bool(entry.stale))
        .set("loading", .bool(entry.loading))
      if let shifted = entry.shifted { object.set("shifted", .string(shifted)) }
      since(entry.answeredAt, "fetched", into: object)
      list.append(object.set("error", error(entry.error)))
    }
    return Self.section(total: section.total, shown: section.items.count, list)
  }

  /// Null when the backend does not go over HTTP (nothing holds its calls).
  func holds(_ holds: ModelInspection.Holds?) -> JSON {
    guard let holds else { return .null() }
    let queue = holds.queue
    let rateLimit: JSON
    if let until = queue.heldUntil {
      let left = until > now ? NetmodelService.milliseconds(until - now) : 0
      let reason = JSON.object()
        .set("status", queue.reason.map { JSON.integer($0.status) } ?? .null())
        .set("header", queue.reason?.header.map { JSON.string($0) } ?? .null())
        .set("value", queue.reason?.value.map { JSON.string($0) } ?? .null())
      rateLimit = JSON.object()
        .set("untilMs", .integer(left))
        .set("until", .string(RFC3339.milliseconds(since1970: wallNowMs + left)))
        .set("reason", reason)
    } else {
      rateLimit = .null()
    }
    let waiting = JSON.array()
    for request in queue.oldestWaiting {
      let object = JSON.object()
        .set("request", .string(request.summary))
        .set("priority", .string(Self.priorityName(request.priority)))
      since(request.since, "since", into: object)
      waiting.append(object)
    }
    return JSON.object()
      .set("api", .string(holds.api))
      .set("environment", .string(holds.environment))
      .set("rateLimit", rateLimit)
      .set("inFlight", .integer(queue.inFlight))
      .set("maxConnections", .integer(queue.maxConnections))
      .set("waiting", Self.section(total: queue.waiting, shown: queue.oldestWaiting.count, waiting))
  }

  static func priorityName(_ priority: HTTPPriority) -> String {
    switch priority {
    case .preload: "preload"
    case .display: "display"
    case .visible: "visible"
    case .user: "user"
    }
  }
}
