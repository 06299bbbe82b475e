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
  static func captured(_ capture: [RESTConfiguration.Capture], in json: JSON) -> [String: String]? {
    try? capturedValues(capture, in: json).get()
  }

  /// The values, or what is wrong with the first that is missing or does not match.
  static func capturedValues(_ capture: [RESTConfiguration.Capture], in json: JSON) -> Result<
    [String: String], RESTConfiguration.CaptureMiss
  > {
    var values: [String: String] = [:]
    for item in capture {
      let text: String
      if let value = json.value(at: item.pointer)?.string {
        text = value
      } else if let number = json.value(at: item.pointer)?.integer {
        text = String(number)
      } else {
        return .failure(RESTConfiguration.CaptureMiss("no string or integer at \(item.pointer)"))
      }
      switch item.part(of: text) {
      case .success(let part): values[item.name] = part
      case .failure(let miss): return .failure(miss)
      }
    }
    return .success(values)
  }

  /// Keeps a follow answer's values before the follow is confirmed: a follow whose
  /// value is not held could not be undone, so an answer without it, or a value that
  /// could not be written to disk, fails the follow (unavailable: it is tried again).
  func keepCaptures(_ key: EntityKey, _ capture: [RESTConfiguration.Capture], _ response: HTTPResponse)
    -> FollowFailure?
  {
    let values: [String: String]
    switch (try? JSON.parse(response.body)).map({ Self.capturedValues(capture, in: $0) }) {
    case .success(let held)?: values = held
    case .failure(let miss)?:
      return FollowFailure(
        .unavailable,
        "the follow answer (HTTP \(response.status)): \(miss): without it \(key) could not be unfollowed")
    case nil:
      let names = capture.map { "\($0.pointer)" }.joined(separator: ", ")
      return FollowFailure(
        .unavailable,
        "the follow answer (HTTP \(response.status)) is not JSON, so it has nothing at \(names): without it \(key) could not be unfollowed"
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
  func captureFromState(_ key: EntityKey, _ capture: [RESTConfiguration.Capture], _ response: HTTPResponse) {
    guard let json = try? JSON.parse(response.body) else { return }
    captureFromState(key, capture, json)
  }

  func captureFromState(_ key: EntityKey, _ capture: [RESTConfiguration.Capture], _ json: JSON) {
    let values: [String: String]
    switch Self.capturedValues(capture, in: json) {
    case .success(let held): values = held
    case .failure(let miss):
      Log.warn("the state read for \(key) holds no value for its unfollow: \(miss)")
      lastCaptureMiss[key] = miss.description
      return
    }
    lastCaptureMiss[key] = nil
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
    lastCaptureMiss[key] = nil
    do {
      try capturedValues.forget(key, in: environment)
    } catch {
      Log.warn("could not forget the values held for \(key): \(error)")
    }
  }
}
