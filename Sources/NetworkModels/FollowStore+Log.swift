import JSON
import Posix

/// The store's events (docs/operations.md "Logs"): one line for each thing that happened to a
/// user's intent, not one for each call. A rollback is one line; a refused read is one
/// line until the entity's error changes (a client polling a missing entity repeats
/// nothing); a credentials wait is one line when the first intent or read starts
/// waiting, and one when `configure` ends it.
extension FollowStore {
  static func failureFields(_ key: EntityKey, _ failure: FollowFailure) -> [Log.Field] {
    var fields = [Log.Field("kind", key.kind), Log.Field("id", key.id)]
    switch failure.kind {
    case .rejected(let status), .unauthorized(let status): fields.append(Log.Field("status", status))
    case .unavailable: fields.append(Log.Field("failure", "unavailable"))
    case .unknownKind: fields.append(Log.Field("failure", "unknown kind"))
    }
    fields.append(Log.Field("error", failure.message))
    return fields
  }

  static func sameFailure(_ a: FollowFailure, _ b: FollowFailure) -> Bool {
    a.kind == b.kind && a.message.hasSameBytes(as: b.message)
  }

  func logRollback(_ key: EntityKey, wanted: Bool?, _ failure: FollowFailure, retries: Int?) {
    let what = wanted == false ? "an unfollow" : "a follow"
    let sentence =
      retries.map {
        "gave up on \(what) after \($0) \($0 == 1 ? "retry" : "retries"): rolled back to what the API last confirmed"
      }
      ?? "the API refused \(what): rolled back to what it last confirmed"
    Log.event(
      .warn, "rollback", sentence,
      Self.failureFields(key, failure) + (retries.map { [Log.Field("retries", $0)] } ?? []))
  }

  func logFailedRead(_ key: EntityKey, _ failure: FollowFailure) {
    if failure.isRetryable {
      Log.event(.debug, "read.failed", "a read failed", Self.failureFields(key, failure))
    } else {
      Log.event(.warn, "refusal", "the API refused a read", Self.failureFields(key, failure))
    }
  }

  func logGaveUpCheck(_ key: EntityKey, _ failure: FollowFailure, attempts: Int) {
    Log.event(
      .warn, "retry.giveup", "gave up reading the state a rollback left; it shows what the API last confirmed",
      Self.failureFields(key, failure) + [Log.Field("retries", attempts)])
  }

  /// The first intent or read refused for want of credentials starts the wait; the
  /// others join it quietly.
  func startsWaitingForCredentials(_ key: EntityKey, _ failure: FollowFailure, read: Bool) {
    guard waitingForCredentials.isEmpty && readsWaitingForCredentials.isEmpty else {
      return Log.debug("\(key): \(failure.message); waits for credentials as well")
    }
    Log.event(
      .warn, "credentials.wait",
      "the API refused the credentials: the \(read ? "read" : "intent") waits for credentials (configure authToken)",
      Self.failureFields(key, failure))
  }
}
