import JSON
import JSONRPC
import NetworkModels

extension EntityKey {
  /// `{kind, id}` as the follow methods take them.
  static let fields: [ParamField] = [.required("kind", .string), .required("id", .string)]
}

extension ParamsReader {
  /// `{kind, id}` of a follow method, validated as README "EntityState" says.
  func entityKey(prefix: String = "") throws(ResponseError) -> EntityKey {
    guard let kind = try string(ParamKey.kind) else {
      throw .invalidParams("kind is required", path: prefix + "/kind")
    }
    guard let id = try string(ParamKey.id) else { throw .invalidParams("id is required", path: prefix + "/id") }
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
  func knownKey(_ params: borrowing ParamsReader, prefix: String = "") throws(ResponseError) -> EntityKey {
    try checked(try params.entityKey(prefix: prefix), prefix: prefix)
  }

  /// The same for a key already read.
  func checked(_ key: EntityKey, prefix: String = "") throws(ResponseError) -> EntityKey {
    try check(key, prefix: prefix)
    return key
  }

  /// The same check, for a caller that keeps using its own key.
  func check(_ key: EntityKey, prefix: String = "") throws(ResponseError) {
    try checkKind(key.kind, under: prefix)
    try checkSendable(key, prefix: prefix)
  }

  /// `path` is the kind's parent: the error's path is made only for an error.
  func checkKind(_ kind: String, under path: String) throws(ResponseError) {
    guard let problem = backend.kindProblem(kind) else { return }
    let path = path + "/kind"
    throw ResponseError(
      .unknownKindOrList, problem,
      data: JSON.object().set("kind", .string(kind)).set("path", .string(path)).set("retryable", .bool(false)))
  }
}

extension EntityState: EncodableResult {}

extension NetmodelService {
  /// A follow, unfollow or setFollowState of a checked key, answered through `responder`.
  func mutate(_ key: EntityKey, to following: Bool, await awaitSettle: Bool, _ responder: Responder) {
    models.setFollowing(key, following, awaitSettle: awaitSettle) { responder.answer($0) }
  }
}
