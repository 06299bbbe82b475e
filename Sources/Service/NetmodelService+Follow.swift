import JSON
import JSONRPC
import NetworkModels

extension EntityKey {
  /// `{kind, id}` as the follow methods take them.
  static let fields: [ParamField] = [.required("kind", .string), .required("id", .string)]
}

extension ParamsReader {
  /// `{kind, id}` of a follow method, in the form docs/protocol.md "EntityState" gives them.
  /// Whether the backend has the kind and can send the id, the models answer.
  func entityKey(prefix: String = "") throws(ResponseError) -> EntityKey {
    guard let kind = try string(ParamKey.kind) else {
      throw .invalidParams("kind is required", path: prefix + "/kind")
    }
    guard let id = try string(ParamKey.id) else { throw .invalidParams("id is required", path: prefix + "/id") }
    return try admitted(under: prefix) { () throws(AdmissionProblem) in try EntityKey(validatingKind: kind, id: id) }
  }
}

extension EntityState: EncodableResult {}

extension NetmodelService {
  /// A follow, unfollow or setFollowState, answered through `responder`; `client`: the
  /// connection's name from `initialize`, for the ledger.
  func mutate(
    _ key: EntityKey, to following: Bool, await awaitSettle: Bool, client: String?, _ responder: Responder
  ) throws(ResponseError) {
    ledger.client = client
    defer { ledger.client = nil }
    try admitted { () throws(AdmissionProblem) in
      try models.setFollowing(key, following, awaitSettle: awaitSettle) { responder.answer($0) }
    }
  }
}
