import EventLoop
import JSON
import Posix

/// The embedded default backend: the set of followed entities, in memory and in
/// `<state folder>/local-follows.json`
/// (`{"version":1,"follows":{"artist":["banksy",…]}}`, kinds and ids sorted).
///
/// A follow or unfollow is confirmed once it is durable. Writes are group-committed:
/// every change made in one loop iteration is saved by one atomic file replace on
/// the next iteration, and only then are their completions called. Reads answer from
/// memory; a read that arrives while a save is due answers after it, so no answer
/// ever shows a state that might not survive.
///
/// Any kind is accepted. All methods must be called on the loop's thread.
public final class LocalBackend: FollowBackend {
  public static let fileName = "local-follows.json"
  static let formatVersion: Int64 = 1

  private let loop: EventLoop
  public let folder: StateFolder
  /// kind → followed ids, as callers see it now.
  private var follows: [String: Set<String>] = [:]
  /// What the file holds: the state to return to when a save fails.
  private var saved: [String: Set<String>] = [:]
  private var dirty = false
  private var saveScheduled = false
  /// Completions waiting for the next save, in call order.
  private var waiting: [() -> Void] = []

  /// Number of times the file was written (for tests and stats).
  public private(set) var saveCount = 0

  /// Loads the follows saved in `folder`. A file that cannot be understood is kept
  /// as `local-follows.json.corrupt-<n>` and the store starts empty; the error is
  /// logged, never fatal. Throws only when the file cannot be read or moved at all
  /// (permissions, I/O errors), since starting empty then would overwrite it.
  public init(loop: EventLoop, folder: StateFolder) throws(Errno) {
    self.loop = loop
    self.folder = folder
    folder.removeStaleTemporaries()
    guard let bytes = try folder.read(LocalBackend.fileName) else { return }
    switch LocalBackend.decode(bytes) {
    case .success(let loaded):
      follows = loaded
      saved = loaded
    case .failure(let problem):
      let aside = try folder.moveAside(LocalBackend.fileName, suffix: "corrupt")
      Log.warn(
        "\(folder.file(LocalBackend.fileName)) could not be read (\(problem.message)); kept as \(aside), starting with no follows"
      )
    }
  }

  // MARK: FollowBackend

  public func setFollowing(
    _ key: EntityKey, _ following: Bool, completion: @escaping (Result<Bool, FollowFailure>) -> Void
  ) {
    if following {
      if follows[key.kind, default: []].insert(key.id).inserted { dirty = true }
    } else if follows[key.kind]?.remove(key.id) != nil {
      if follows[key.kind]!.isEmpty { follows[key.kind] = nil }
      dirty = true
    }
    // Even an unchanged state waits for the save: an earlier call of this iteration
    // may have made it, and it is confirmed only once it is durable.
    waiting.append { [self] in
      if let failure = self.lastSaveFailure {
        completion(.failure(failure))
      } else {
        completion(.success(following))
      }
    }
    scheduleSave()
  }

  public func fetchFollowing(_ key: EntityKey, completion: @escaping (Result<Bool, FollowFailure>) -> Void) {
    answer { [self] in isFollowing(key) } deliver: { completion(.success($0)) }
  }

  public func followed(kind: String, completion: @escaping (Result<[EntityKey], FollowFailure>) -> Void) {
    answer { [self] in
      (follows[kind] ?? []).sorted().map { EntityKey(kind: kind, id: $0) }
    } deliver: {
      completion(.success($0))
    }
  }

  /// Whether `key` is followed now (synchronous; for tests and the service's stats).
  public func isFollowing(_ key: EntityKey) -> Bool { follows[key.kind]?.contains(key.id) ?? false }

  /// Number of followed entities, all kinds together.
  public var followCount: Int { follows.values.reduce(0) { $0 + $1.count } }

  // MARK: Saving

  /// Set while the completions of a failed save run.
  private var lastSaveFailure: FollowFailure?

  /// Answers a read on a later iteration, always with durable state: when a save is
  /// due, the state is read after it; otherwise it is read now (nothing is unsaved),
  /// so a change made later in this iteration cannot leak into the answer.
  private func answer<T>(_ read: @escaping () -> T, deliver: @escaping (T) -> Void) {
    if saveScheduled {
      waiting.append { deliver(read()) }
    } else {
      let value = read()
      loop.execute { deliver(value) }
    }
  }

  private func scheduleSave() {
    guard !saveScheduled else { return }
    saveScheduled = true
    // Strong capture: a backend dropped with a save due still saves and answers.
    loop.execute { self.saveNow() }
  }

  /// Writes the state once if it changed, then calls every completion that waited
  /// for it. Calls made by those completions wait for the next save.
  private func saveNow() {
    saveScheduled = false
    let batch = waiting
    waiting.removeAll()
    if dirty {
      dirty = false
      do {
        try folder.replace(LocalBackend.fileName, with: LocalBackend.encode(follows))
        saved = follows
        saveCount += 1
      } catch {
        // Nothing of this iteration is durable: go back to what the file holds, and
        // fail the mutations as retryable.
        Log.error("could not save follows: \(error)")
        follows = saved
        lastSaveFailure = FollowFailure(.unavailable, "could not save follows: \(error)")
      }
    }
    for body in batch { body() }
    lastSaveFailure = nil
  }

  // MARK: File format

  struct FormatProblem: Error {
    let message: String
  }

  static func encode(_ follows: [String: Set<String>]) -> [UInt8] {
    let byKind = JSON.object()
    for kind in follows.keys.sorted() {
      guard let ids = follows[kind], !ids.isEmpty else { continue }
      let array = JSON.array()
      for id in ids.sorted() { array.append(.string(id)) }
      byKind.set(kind, array)
    }
    var bytes = JSON.object().set("version", .integer(formatVersion)).set("follows", byKind).encoded()
    bytes.append(UInt8(ascii: "\n"))
    return bytes
  }

  static func decode(_ bytes: [UInt8]) -> Result<[String: Set<String>], FormatProblem> {
    let document: JSON
    do {
      document = try JSON.parse(bytes)
    } catch {
      return .failure(FormatProblem(message: "not JSON: \(error)"))
    }
    guard document.isObject else { return .failure(FormatProblem(message: "not a JSON object")) }
    guard let version = document["version"]?.integer else {
      return .failure(FormatProblem(message: "no integer \"version\""))
    }
    guard version == formatVersion else {
      return .failure(FormatProblem(message: "version \(version), this program reads version \(formatVersion)"))
    }
    guard let byKind = document["follows"], byKind.isObject else {
      return .failure(FormatProblem(message: "no \"follows\" object"))
    }
    var result: [String: Set<String>] = [:]
    for (kind, ids) in byKind.members {
      guard ids.isArray else { return .failure(FormatProblem(message: "follows of \"\(kind)\" is not an array")) }
      var set = Set<String>()
      for element in ids.elements {
        guard let id = element.string, !id.isEmpty else {
          return .failure(FormatProblem(message: "follows of \"\(kind)\" holds \(element.text), not an id"))
        }
        set.insert(id)
      }
      if !set.isEmpty { result[kind] = set }
    }
    return .success(result)
  }
}
