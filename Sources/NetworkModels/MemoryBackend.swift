import EventLoop

/// A backend that keeps follows in memory and confirms on the next loop iteration:
/// for tests, fuzzing and benchmarks that must not touch the disk.
public final class MemoryBackend: ModelBackend {
  private let loop: EventLoop
  public private(set) var follows: Set<EntityKey> = []

  public init(loop: EventLoop) { self.loop = loop }

  public var capabilities: BackendCapabilities {
    BackendCapabilities(lists: FollowingLists(loop: loop, followed: followed))
  }

  public func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void
  ) {
    if following { follows.insert(key) } else { follows.remove(key) }
    loop.execute { completion(.success(FollowAnswer(following))) }
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<FollowAnswer, FollowFailure>) -> Void) {
    let following = follows.contains(key)
    loop.execute { completion(.success(FollowAnswer(following))) }
  }

  public func followed(kind: String, completion: @escaping (Result<[EntityKey], FollowFailure>) -> Void) {
    let keys = follows.filter { $0.kind == kind }.sorted()
    loop.execute { completion(.success(keys)) }
  }
}
