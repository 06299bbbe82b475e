import JSON
import JSONRPC
import NetworkModels

extension NetmodelService {
  func registerSubscriptionMethods() {
    let dispatcher = server.dispatcher
    dispatcher.register("subscribe") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      guard let topicsValue = params.value("topics"), topicsValue.isArray, topicsValue.count > 0 else {
        throw .invalidParams("topics must be a non-empty array", path: "/topics")
      }
      var topics: [SubscriptionHub.Topic] = []
      for (index, value) in topicsValue.elements.enumerated() {
        topics.append(try self.topic(value, path: "/topics/\(index)"))
      }
      let subscription = self.subscriptions.subscribe(topics, on: request.connection)
      var snapshot: [EntityState] = []
      var listSnapshots: [ListStore.Snapshot] = []
      var seen: Set<EntityKey> = []
      for topic in topics {
        switch topic {
        case .list(let key, let values):
          // As with an entity never fetched, a list never loaded starts loading.
          self.lists.loadIfIdle(key, params: values)
          if let list = self.lists.snapshot(key, params: values) { listSnapshots.append(list) }
        case .entity(let kind?, let id?):
          let key = EntityKey(kind: kind, id: id)
          if seen.insert(key).inserted { snapshot.append(self.store.state(key)) }
          self.store.fetchIfUnknown(key)
        case .entity(let kind, nil):
          for key in self.store.keys(kind: kind).sorted(by: { ($0.kind, $0.id) < ($1.kind, $1.id) })
          where seen.insert(key).inserted {
            snapshot.append(self.store.state(key))
          }
        case .entity(nil, .some):
          break
        }
      }
      let states = snapshot
      let listStates = listSnapshots
      request.responder.succeed { [unowned self] buffer in
        buffer.append(contentsOf: Array(#"{"subscription":"#.utf8))
        appendJSONString(subscription.id, to: &buffer)
        buffer.append(contentsOf: Array(#","snapshot":["#.utf8))
        for (index, state) in states.enumerated() {
          if index > 0 { buffer.append(UInt8(ascii: ",")) }
          state.encode(into: &buffer)
        }
        for (index, list) in listStates.enumerated() {
          if index > 0 || !states.isEmpty { buffer.append(UInt8(ascii: ",")) }
          self.encode(list, into: &buffer)
        }
        buffer.append(contentsOf: Array(#"],"instance":"#.utf8))
        appendJSONString(self.instance, to: &buffer)
        buffer.append(UInt8(ascii: "}"))
      }
    }
    dispatcher.register("unsubscribe") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      guard let id = try params.string("subscription") else {
        throw .invalidParams("subscription is required", path: "/subscription")
      }
      guard self.subscriptions.unsubscribe(id, on: request.connection) else {
        throw .invalidParams("no subscription \(id) on this connection", path: "/subscription")
      }
      request.responder.succeed(JSON.object().set("ok", .bool(true)))
    }
  }

  func topic(_ value: JSON, path: String) throws(ResponseError) -> SubscriptionHub.Topic {
    guard value.isObject else { throw .invalidParams("a topic must be an object", path: path) }
    let params = try Params(value, path: path)
    switch try params.string("type") {
    case "entity":
      let kind = try params.string("kind")
      let id = try params.string("id")
      if id != nil && kind == nil {
        throw .invalidParams("an entity topic with an id needs a kind", path: path + "/kind")
      }
      if let kind, let problem = EntityKey.problem(kind: kind, id: id ?? "x") {
        throw .invalidParams(problem.reason, path: path + "/" + problem.field)
      }
      if let kind { try checkKind(kind, path: path + "/kind") }
      if let kind, let id { _ = try sendable(EntityKey(kind: kind, id: id), prefix: path) }
      return .entity(kind: kind, id: id)
    case "list":
      let (key, values) = try checkedListKey(params, path: path)
      return .list(key, params: values)
    case nil: throw .invalidParams("type is required", path: path + "/type")
    case let other?: throw .invalidParams("unknown topic type \(other)", path: path + "/type")
    }
  }
}
