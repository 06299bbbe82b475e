import JSONRPC
import NetworkModels

extension NetmodelService {
  /// `key`, unless the backend could not send its id as the path segment it is
  /// (`..` would call the parent resource): then -32602 at once, before any state
  /// changes, so nothing is shown, notified, versioned or put in the outbox.
  func sendable(_ key: EntityKey, prefix: String = "") throws(ResponseError) -> EntityKey {
    if let backend = models.placeholders,
      let problem = backend.validatePlaceholders(kind: key.kind, id: key.id)
    {
      throw .invalidParams(problem.reason, path: prefix + problem.path)
    }
    return key
  }

  /// The same for a list's params.
  func checkSendable(list: String, params: [String: String], prefix: String) throws(ResponseError) {
    if let backend = models.placeholders,
      let problem = backend.validatePlaceholders(list: list, params: params)
    {
      throw .invalidParams(problem.reason, path: prefix + problem.path)
    }
  }
}
