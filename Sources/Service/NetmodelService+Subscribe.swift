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
        topics.append(try Self.topic(value, path: "/topics/\(index)"))
      }
      let subscription = self.subscriptions.subscribe(topics, on: request.connection)
      var snapshot: [EntityState] = []
      var seen: Set<EntityKey> = []
      for topic in topics {
        switch topic {
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
      request.responder.succeed { buffer in
        buffer.append(contentsOf: Array(#"{"subscription":"#.utf8))
        appendJSONString(subscription.id, to: &buffer)
        buffer.append(contentsOf: Array(#","snapshot":["#.utf8))
        for (index, state) in states.enumerated() {
          if index > 0 { buffer.append(UInt8(ascii: ",")) }
          state.encode(into: &buffer)
        }
        buffer.append(contentsOf: Array("]}".utf8))
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

  static func topic(_ value: JSON, path: String) throws(ResponseError) -> SubscriptionHub.Topic {
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
      return .entity(kind: kind, id: id)
    case "list":
      let list = try params.string("list") ?? ""
      throw ResponseError(
        .unknownKindOrList, "unknown list \(list)",
        data: JSON.object().set("list", .string(list)).set("retryable", .bool(false)))
    case nil: throw .invalidParams("type is required", path: path + "/type")
    case let other?: throw .invalidParams("unknown topic type \(other)", path: path + "/type")
    }
  }
}
