import JSON
import JSONRPC
import NetworkModels

extension NetmodelService {
  /// One of `subscribe`'s topics, admitted by the models.
  func topic(_ value: JSON, path: String) throws(ResponseError) -> SubscriptionHub.Topic {
    guard value.isObject else { throw .invalidParams("a topic must be an object", path: path) }
    let params = ParamsReader(value, path: path)
    switch try params.string("type") {
    case "entity":
      let kind = try params.string("kind")
      let id = try params.string("id")
      if id != nil && kind == nil {
        throw .invalidParams("an entity topic with an id needs a kind", path: path + "/kind")
      }
      return .entity(kind: kind, id: id)
    case "list":
      let (key, values) = try Self.listKey(params, path: path)
      return .list(key, params: values)
    case "stats":
      guard value.count == 1 else { throw .invalidParams("a stats topic has only a type", path: path) }
      return .stats
    case "mutations":
      guard value.count == 1 else { throw .invalidParams("a mutations topic has only a type", path: path) }
      return .mutations
    case nil: throw .invalidParams("type is required", path: path + "/type")
    case let other?: throw .invalidParams("unknown topic type \(other)", path: path + "/type")
    }
  }
}

extension SubscriptionHub.Topic {
  /// What the topic watches in the models; nil for the server's own figures.
  var modelTopic: Models.Topic? {
    switch self {
    case .entity(let kind, let id): .entity(kind: kind, id: id)
    case .list(let key, let params): .list(key, params: params)
    case .stats, .mutations: nil
    }
  }
}
