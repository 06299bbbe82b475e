import JSON
import JSONRPC
import NetworkModels

extension Params {
  /// `{kind, id}` of a follow method, validated as README "EntityState" says.
  func entityKey(prefix: String = "") throws(ResponseError) -> EntityKey {
    guard let kind = try string("kind") else { throw .invalidParams("kind is required", path: prefix + "/kind") }
    guard let id = try string("id") else { throw .invalidParams("id is required", path: prefix + "/id") }
    if let problem = EntityKey.problem(kind: kind, id: id) {
      throw .invalidParams(problem.reason, path: prefix + "/" + problem.field)
    }
    return EntityKey(kind: kind, id: id)
  }
}

extension NetmodelService {
  /// `{kind, id}` of a request, refused at once when the backend cannot have that kind
  /// (-32004) or cannot send that id (-32602, a dot segment): no state changes, no
  /// version, no notification, nothing in the outbox.
  func knownKey(_ params: Params, prefix: String = "") throws(ResponseError) -> EntityKey {
    let key = try params.entityKey(prefix: prefix)
    try checkKind(key.kind, path: prefix + "/kind")
    return try sendable(key, prefix: prefix)
  }

  func checkKind(_ kind: String, path: String) throws(ResponseError) {
    guard let problem = models.kindProblem(kind) else { return }
    throw ResponseError(
      .unknownKindOrList, problem,
      data: JSON.object().set("kind", .string(kind)).set("path", .string(path)).set("retryable", .bool(false)))
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
      try self.mutate(try self.knownKey(params), to: true, await: try params.bool("await") ?? false, request.responder)
    }
    dispatcher.register("unfollow") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      try self.mutate(try self.knownKey(params), to: false, await: try params.bool("await") ?? false, request.responder)
    }
    dispatcher.register("setFollowState") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      let key = try self.knownKey(params)
      guard let following = try params.bool("following") else {
        throw .invalidParams("following is required", path: "/following")
      }
      try self.mutate(key, to: following, await: try params.bool("await") ?? false, request.responder)
    }
    dispatcher.register("getFollowState") { [unowned self] request throws(ResponseError) in
      let params = try Params(request)
      let key = try self.knownKey(params)
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
    models.setFollowing(key, following, awaitSettle: awaitSettle) { responder.answer($0) }
  }
}
