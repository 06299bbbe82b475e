import JSON
import JSONRPC
import NetworkModels

extension NetmodelService {
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
      if let kind, let problem = EntityKey.problem(kind: kind, id: id ?? "x") {
        throw .invalidParams(problem.reason, path: path + "/" + problem.field)
      }
      if let kind { try checkKind(kind, under: path) }
      if let kind, let id { try checkSendable(EntityKey(kind: kind, id: id), prefix: path) }
      return .entity(kind: kind, id: id)
    case "list":
      let (key, values) = try checkedListKey(params, path: path)
      return .list(key, params: values)
    case "stats":
      guard value.count == 1 else { throw .invalidParams("a stats topic has only a type", path: path) }
      return .stats
    case nil: throw .invalidParams("type is required", path: path + "/type")
    case let other?: throw .invalidParams("unknown topic type \(other)", path: path + "/type")
    }
  }
}
