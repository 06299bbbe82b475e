import JSON
import JSONRPC
import NetworkModels

extension NetmodelService {
  func registerPreloadMethods() {
    let dispatcher = server.dispatcher
    dispatcher.register("setInterfaceState") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      guard let name = try params.string("state") else { throw .invalidParams("state is required", path: "/state") }
      guard let level = Preloader.Level(name: name) else {
        throw .invalidParams("state must be none, preload, display or visible", path: "/state")
      }
      guard let items = params.value("items"), items.isArray else {
        throw .invalidParams("items must be an array of {kind, id}", path: "/items")
      }
      var keys: [EntityKey] = []
      keys.reserveCapacity(items.count)
      for (index, item) in items.elements.enumerated() {
        let path = "/items/\(index)"
        guard item.isObject else { throw .invalidParams("an item must be {kind, id}", path: path) }
        keys.append(try self.knownKey(Params(item, path: path), prefix: path))
      }
      self.preloader.set(keys, to: level, host: request.connection.id)
      request.responder.succeed(JSON.object().set("accepted", .integer(keys.count)))
    }
    dispatcher.register("getEntity") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      let key = try self.knownKey(params)
      let refresh = try params.bool("refresh") ?? false
      let responder = request.responder
      self.preloader.entity(key, refresh: refresh) { result in
        switch result {
        case .success(let state): responder.succeed(state)
        case .failure(let failure): responder.fail(failure.failure.responseError(state: failure.state))
        }
      }
    }
  }
}
