import JSON
import JSONRPC
import NetworkModels

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
