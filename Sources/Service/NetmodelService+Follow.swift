import JSON
import JSONRPC
import NetworkModels

extension Params {
  /// `{kind, id}` of a follow method, validated as PROTOCOL.md "Data" says.
  func entityKey(prefix: String = "") throws(ResponseError) -> EntityKey {
    guard let kind = try string("kind") else { throw .invalidParams("kind is required", path: prefix + "/kind") }
    guard let id = try string("id") else { throw .invalidParams("id is required", path: prefix + "/id") }
    if let problem = EntityKey.problem(kind: kind, id: id) {
      throw .invalidParams(problem.reason, path: prefix + "/" + problem.field)
    }
    return EntityKey(kind: kind, id: id)
  }
}

extension Responder {
  func succeed(_ state: EntityState) {
    succeed { state.encode(into: &$0) }
  }
}

extension NetmodelService {
  func registerFollowMethods() {
    let dispatcher = server.dispatcher
    dispatcher.register("follow") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      try self.mutate(
        try self.sendable(params.entityKey()), to: true, await: try params.bool("await") ?? false, request.responder)
    }
    dispatcher.register("unfollow") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      try self.mutate(
        try self.sendable(params.entityKey()), to: false, await: try params.bool("await") ?? false, request.responder)
    }
    dispatcher.register("setFollowState") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      let key = try self.sendable(params.entityKey())
      guard let following = try params.bool("following") else {
        throw .invalidParams("following is required", path: "/following")
      }
      try self.mutate(key, to: following, await: try params.bool("await") ?? false, request.responder)
    }
    dispatcher.register("getFollowState") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      let key = try self.sendable(params.entityKey())
      let refresh = try params.bool("refresh") ?? false
      let maxAge = try params.integer("maxAgeMs")
      if let maxAge, maxAge < 0 { throw .invalidParams("maxAgeMs must be ≥ 0", path: "/maxAgeMs") }
      let responder = request.responder
      self.store.read(key, refresh: refresh, maxAgeMs: maxAge.map(UInt64.init) ?? self.configuration.defaultMaxAgeMs) {
        result in
        switch result {
        case .success(let state): responder.succeed(state)
        case .failure(let failure): responder.fail(failure.failure.responseError(state: failure.state))
        }
      }
    }
  }

  private func mutate(_ key: EntityKey, to following: Bool, await awaitSettle: Bool, _ responder: Responder)
    throws(ResponseError)
  {
    guard awaitSettle else {
      responder.succeed(store.setFollowing(key, following))
      return
    }
    store.setFollowing(key, following) { result in
      switch result {
      case .success(let state): responder.succeed(state)
      case .failure(let failure): responder.fail(failure.failure.responseError(state: failure.state))
      }
    }
  }
}
