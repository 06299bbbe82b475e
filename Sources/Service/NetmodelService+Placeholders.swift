import JSONRPC
import NetworkModels

extension NetmodelService {
  /// Refuses `key` when the backend could not send its id as the path segment it is
  /// (`..` would call the parent resource): then -32602 at once, before any state
  /// changes, so nothing is shown, notified, versioned or put in the outbox.
  func checkSendable(_ key: EntityKey, prefix: String = "") throws(ResponseError) {
    if let placeholders, let problem = placeholders.validatePlaceholders(kind: key.kind, id: key.id) {
      throw .invalidParams(problem.reason, path: prefix + problem.path)
    }
  }

  /// The same for a list's params.
  func checkSendable(list: String, params: [String: String], prefix: String) throws(ResponseError) {
    if let placeholders, let problem = placeholders.validatePlaceholders(list: list, params: params) {
      throw .invalidParams(problem.reason, path: prefix + problem.path)
    }
  }
}
