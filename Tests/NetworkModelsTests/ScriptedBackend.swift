import EventLoop
import NetworkModels

/// A backend whose calls wait until the test answers them, so every interleaving of
/// replies, reads and toggles can be written down and replayed exactly.
final class ScriptedBackend: ModelBackend {
  enum Call: Equatable {
    case set(EntityKey, Bool)
    case fetch(EntityKey)
  }

  private(set) var calls: [Call] = []
  private var pending: [(call: Call, complete: (Result<FollowAnswer, FollowFailure>) -> Void)] = []
  /// What the backend holds: applied by successful `set` answers.
  var truth: [EntityKey: Bool] = [:]

  var waitingCount: Int { pending.count }
  var waiting: [Call] { pending.map(\.call) }

  func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    calls.append(.set(key, following))
    pending.append((.set(key, following), completion))
  }

  func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    calls.append(.fetch(key))
    pending.append((.fetch(key), completion))
  }

  /// Answers the oldest waiting call with success (applying a `set` to `truth`).
  func succeed(_ index: Int = 0) {
    let (call, complete) = pending.remove(at: index)
    switch call {
    case .set(let key, let value):
      truth[key] = value
      complete(.success(FollowAnswer(value)))
    case .fetch(let key):
      complete(.success(FollowAnswer(truth[key] ?? false)))
    }
  }

  /// Answers a waiting call with `answer` as it is (a follow request awaiting approval),
  /// leaving `truth` alone.
  func answer(_ index: Int = 0, with answer: FollowAnswer) {
    let (_, complete) = pending.remove(at: index)
    complete(.success(answer))
  }

  func fail(_ index: Int = 0, _ failure: FollowFailure) {
    let (_, complete) = pending.remove(at: index)
    complete(.failure(failure))
  }

  var mutationCount: Int { calls.filter { if case .set = $0 { return true } else { return false } }.count }
}

let transient = FollowFailure(.unavailable, "503 Service Unavailable")
let permanent = FollowFailure(.rejected(status: 400), "400 Bad Request")
