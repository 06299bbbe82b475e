import JSON
import Posix

/// The entity states a run last knew, kept in the state folder (`states`) so that the
/// next start answers a read at once with them, marked stale, while it asks the
/// backend again (docs/operations.md "A warm start"). Only what the backend confirmed
/// is kept, never a pending intent (the outbox holds those, durably), so the file can
/// never show a change before the change is safe. It is a cache: written without a
/// sync, and read as hostile input — a line that does not parse is skipped, a file of
/// another environment or form is not used.
public struct WarmStates {
  public static let fileName = "states"
  /// Bytes of the file at most, the most recently used entities first.
  public static let defaultMaxBytes = 4 << 20

  public struct Entry: Equatable {
    public let key: EntityKey
    public let following: Bool
    public let requested: Bool
    /// When the backend confirmed it, in milliseconds since the epoch.
    public let confirmedAtMs: UInt64
  }

  /// The first line: what the rest is, and the environment it was confirmed in.
  static func header(environment: String) -> [UInt8] {
    var line: [UInt8] = []
    appendLiteral(#"{"netmodel":"states","form":1,"environment":"#, to: &line)
    appendJSONString(environment, to: &line)
    appendLiteral("}\n", to: &line)
    return line
  }

  static func line(_ entry: Entry) -> [UInt8] {
    var line: [UInt8] = []
    appendLiteral(#"{"kind":"#, to: &line)
    appendJSONString(entry.key.kind, to: &line)
    appendLiteral(#","id":"#, to: &line)
    appendJSONString(entry.key.id, to: &line)
    appendLiteral(entry.following ? #","following":true"# : #","following":false"#, to: &line)
    if entry.requested { appendLiteral(#","requested":true"#, to: &line) }
    appendLiteral(#","at":"#, to: &line)
    appendDecimal(Int64(clamping: entry.confirmedAtMs), to: &line)
    appendLiteral("}\n", to: &line)
    return line
  }

  /// The file's text for `entries` (most recently used first), cut at `maxBytes`.
  public static func encode(_ entries: [Entry], environment: String, maxBytes: Int) -> (text: [UInt8], kept: Int) {
    var text = header(environment: environment)
    var kept = 0
    for entry in entries {
      let line = line(entry)
      guard text.count + line.count <= maxBytes else { break }
      text += line
      kept += 1
    }
    return (text, kept)
  }

  public enum ReadResult: Equatable {
    case entries([Entry], skipped: Int)
    /// Not a states file of this form, or of another environment: not used.
    case unused(String)
  }

  /// The entries of a file's text confirmed in `environment`, each line checked as
  /// a request's key would be (`EntityKey.problem`); `now` bounds `at` (a time in
  /// the future is a line that lies).
  public static func read(_ bytes: [UInt8], environment: String, nowMs: UInt64) -> ReadResult {
    var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)[...]
    guard let first = lines.popFirst(), let header = try? JSON.parse(Array(first)),
      header["netmodel"]?.string == "states", header["form"]?.integer == 1,
      let written = header["environment"]?.string
    else { return .unused("not a states file of this form") }
    guard written.utf8.elementsEqual(environment.utf8) else {
      return .unused("its states were confirmed in the environment \(written), not \(environment)")
    }
    var entries: [Entry] = []
    var skipped = 0
    var seen: Set<EntityKey> = []
    for line in lines {
      guard let object = try? JSON.parse(Array(line)), let entry = Self.entry(object, nowMs: nowMs),
        seen.insert(entry.key).inserted
      else {
        skipped += 1
        continue
      }
      entries.append(entry)
    }
    return .entries(entries, skipped: skipped)
  }

  private static func entry(_ object: JSON, nowMs: UInt64) -> Entry? {
    guard object.isObject, object.count <= 5, let kind = object["kind"]?.string, let id = object["id"]?.string,
      EntityKey.problem(kind: kind, id: id) == nil, let following = object["following"]?.bool,
      let at = object["at"]?.integer, at >= 0, UInt64(at) <= nowMs
    else { return nil }
    let requested = object["requested"]?.bool ?? false
    // A follow request awaiting approval is not a follow: `following` is false then.
    guard !(requested && following) else { return nil }
    return Entry(
      key: EntityKey(kind: kind, id: id), following: following, requested: requested, confirmedAtMs: UInt64(at))
  }
}
