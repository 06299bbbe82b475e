import JSON
import JSONRPC
import NetworkModels

/// `subscribe`: `stateChanged` notifications for entities and lists, and their states
/// now (README "Subscriptions").
enum Subscribe: ServiceMethod {
  static let name = "subscribe"
  static let errorCodes = ErrorCode.everyMethod + [.unknownKindOrList]

  struct Params: MethodParams {
    static let fields: [ParamField] = [.required("topics", .array)]
    /// Read into topics by the handler: a topic's kind and list are checked against
    /// the backend.
    let topics: JSON

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      guard let topics = try params.value("topics"), topics.isArray, topics.count > 0 else {
        throw .invalidParams("topics must be a non-empty array", path: "/topics")
      }
      self.topics = topics
    }
  }

  struct Result: EncodableResult {
    unowned let service: NetmodelService
    let subscription: String
    let states: [EntityState]
    let lists: [ListStore.Snapshot]

    func encode(into buffer: inout [UInt8]) {
      buffer.append(contentsOf: Array(#"{"subscription":"#.utf8))
      appendJSONString(subscription, to: &buffer)
      buffer.append(contentsOf: Array(#","snapshot":["#.utf8))
      for (index, state) in states.enumerated() {
        if index > 0 { buffer.append(UInt8(ascii: ",")) }
        state.encode(into: &buffer)
      }
      for (index, list) in lists.enumerated() {
        if index > 0 || !states.isEmpty { buffer.append(UInt8(ascii: ",")) }
        service.encode(list, into: &buffer)
      }
      buffer.append(contentsOf: Array(#"],"instance":"#.utf8))
      appendJSONString(service.instance, to: &buffer)
      buffer.append(UInt8(ascii: "}"))
    }
  }

  static func handle(_ request: Request<Subscribe>, by service: NetmodelService) throws(ResponseError) {
    var topics: [SubscriptionHub.Topic] = []
    for (index, value) in request.params.topics.elements.enumerated() {
      topics.append(try service.topic(value, path: "/topics/\(index)"))
    }
    let subscription = service.subscriptions.subscribe(topics, on: request.connection)
    var snapshot: [EntityState] = []
    var listSnapshots: [ListStore.Snapshot] = []
    var seen: Set<EntityKey> = []
    for topic in topics {
      switch topic {
      case .list(let key, let values):
        // As with an entity never fetched, a list never loaded starts loading.
        service.lists.loadIfIdle(key, params: values)
        if let list = service.lists.snapshot(key, params: values) { listSnapshots.append(list) }
      case .entity(let kind?, let id?):
        let key = EntityKey(kind: kind, id: id)
        if seen.insert(key).inserted { snapshot.append(service.store.state(key)) }
        service.store.fetchIfUnknown(key)
      case .entity(let kind, nil):
        for key in service.store.keys(kind: kind).sorted(by: { ($0.kind, $0.id) < ($1.kind, $1.id) })
        where seen.insert(key).inserted {
          snapshot.append(service.store.state(key))
        }
      case .entity(nil, .some):
        break
      case .stats:
        // Its snapshot comes as its first `stats` notification, right after this reply.
        break
      }
    }
    if topics.contains(where: { if case .stats = $0 { true } else { false } }) {
      service.statsSubscribed(subscription)
    }
    request.reply.succeed(
      Result(service: service, subscription: subscription.id, states: snapshot, lists: listSnapshots))
  }
}
