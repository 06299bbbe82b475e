import HTTP
import JSON
import Posix

/// Values carried from answers into later requests (`"capture": {"subscriptionId": "/id"}`):
/// YouTube's unfollow takes the subscription's id, which only its follow and state
/// answers give. They are held per entity in `capturedValues` (durable with a state
/// folder) and forgotten once the entity is known not followed.
extension RESTSession {
  /// The values at `capture`'s pointers in `json`; nil when one is missing or is
  /// neither a string nor an integer (taken as its decimal text).
  static func captured(_ capture: [(name: String, pointer: JSONPointer)], in json: JSON) -> [String: String]? {
    var values: [String: String] = [:]
    for (name, pointer) in capture {
      guard let value = json.value(at: pointer) else { return nil }
      if let text = value.string {
        values[name] = text
      } else if let number = value.integer {
        values[name] = String(number)
      } else {
        return nil
      }
    }
    return values
  }

  /// Keeps a follow answer's values before the follow is confirmed: a follow whose
  /// value is not held could not be undone, so an answer without it, or a value that
  /// could not be written to disk, fails the follow (unavailable: it is tried again).
  func keepCaptures(_ key: EntityKey, _ capture: [(name: String, pointer: JSONPointer)], _ response: HTTPResponse)
    -> FollowFailure?
  {
    let names = capture.map { "\($0.pointer)" }.joined(separator: ", ")
    guard let json = try? JSON.parse(response.body), let values = Self.captured(capture, in: json) else {
      return FollowFailure(
        .unavailable,
        "the follow answer (HTTP \(response.status)) has no string or integer at \(names): without it \(key) could not be unfollowed"
      )
    }
    do {
      try capturedValues.keep(values, for: key, in: environment)
    } catch {
      return FollowFailure(.unavailable, "could not keep the follow's values for \(key): \(error)")
    }
    return nil
  }

  /// A state read's values: a read's answer is about the state, so one without them
  /// still answers it (the unfollow that needs them fails instead), and one that
  /// cannot be written stays held in memory.
  func captureFromState(_ key: EntityKey, _ capture: [(name: String, pointer: JSONPointer)], _ response: HTTPResponse) {
    guard let json = try? JSON.parse(response.body) else { return }
    captureFromState(key, capture, json)
  }

  func captureFromState(_ key: EntityKey, _ capture: [(name: String, pointer: JSONPointer)], _ json: JSON) {
    guard let values = Self.captured(capture, in: json) else { return }
    do {
      try capturedValues.keep(values, for: key, in: environment)
    } catch {
      Log.warn("could not keep the values read for \(key) on disk (held until the server stops): \(error)")
    }
  }

  /// The entity is not followed: what its values named is gone. A file that cannot
  /// be written keeps a stale value, which at worst makes a later unfollow ask for
  /// something gone (YouTube: 404 subscriptionNotFound).
  func forgetCaptures(_ key: EntityKey) {
    do {
      try capturedValues.forget(key, in: environment)
    } catch {
      Log.warn("could not forget the values held for \(key): \(error)")
    }
  }
}
