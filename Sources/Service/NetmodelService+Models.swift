import JSON
import JSONRPC
import NetworkModels

/// The service shows the models' changes to its subscribers, and says what they hold.
extension NetmodelService: ModelObserver {
  public func modelChanged(_ change: Models.Change) {
    switch change {
    case .entity(let state): subscriptions.publish(state)
    case .list(let key): subscriptions.publish(list: key)
    }
  }

  public func holds(_ entity: EntityKey) -> Bool { subscriptions.isSubscribed(entity) }

  public func holds(_ list: ListKey) -> Bool { subscriptions.hasSubscribers(list) }
}

extension Responder {
  /// A mutation's answer. One still awaited when the process stops is answered -32005
  /// with its state, like every other error of a mutation.
  func answer(_ outcome: Models.MutationOutcome) {
    switch outcome {
    case .state(let state): succeed(state)
    case .failure(let failure): fail(failure.failure.responseError(state: failure.state))
    case .stopped(let state):
      let data = JSON.object().set("retryable", .bool(true)).set("state", state.json)
      fail(ResponseError(.shuttingDown, "server shutting down; the intent is kept for its next start", data: data))
    }
  }
}
