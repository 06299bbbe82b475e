import JSON
import Posix

/// Values an API answered for an entity that its later requests need (YouTube's
/// subscription id, which its unfollow takes instead of the channel's), per
/// environment: a subscription id of the demo server means nothing to the real API.
///
/// Kept in the state folder's own file `rest-captures.json` rather than the journal:
/// a capture must be durable before the follow that made it is confirmed, which the
/// journal gives only at its commit, after the loop turn; a whole-file atomic replace
/// (`StateFolder.replace`, fsync'd) is durable when `keep` returns. It costs one write
/// of every held value per new value: fine for the hundreds a user follows, and a
/// value that did not change writes nothing (state reads re-capture what is held).
///
/// A file that cannot be read is moved aside and the values start empty: an unfollow
/// that needs one reads the state first, which captures it again.
public final class CapturedValues {
  public static let fileName = "rest-captures.json"
  private let folder: StateFolder?
  private var held: [String: [EntityKey: [String: String]]] = [:]
  /// Entities with values held, in all environments: with none (every API without
  /// `capture`), forgetting costs nothing on each read that says "not following".
  public private(set) var count = 0

  /// Values in memory only (tests, or a backend without a state folder).
  public init() { folder = nil }

  public init(folder: StateFolder) throws(Errno) {
    self.folder = folder
    guard let bytes = try folder.read(Self.fileName) else { return }
    if let parsed = Self.parse(bytes) {
      held = parsed
      count = parsed.values.reduce(0) { $0 + $1.count }
    } else {
      let aside = try folder.moveAside(Self.fileName, suffix: "unreadable")
      Log.warn("\(folder.file(Self.fileName)) could not be read: moved to \(aside); captured values start empty")
    }
  }

  public func values(of key: EntityKey, in environment: String) -> [String: String] {
    held[environment]?[key] ?? [:]
  }

  /// Holds `values` for `key` (over those held) durably: when this returns they are on
  /// disk; when it throws nothing changed.
  public func keep(_ values: [String: String], for key: EntityKey, in environment: String) throws(Errno) {
    let old = held[environment]?[key] ?? [:]
    let merged = old.merging(values) { $1 }
    guard merged != old else { return }
    try change(key, in: environment, to: merged, from: old)
  }

  /// Drops what is held for `key`: the subscription it named is gone.
  public func forget(_ key: EntityKey, in environment: String) throws(Errno) {
    guard count > 0, let old = held[environment]?[key] else { return }
    try change(key, in: environment, to: nil, from: old)
  }

  private func change(_ key: EntityKey, in environment: String, to new: [String: String]?, from old: [String: String])
    throws(Errno)
  {
    let delta = (new == nil ? 0 : 1) - (old.isEmpty ? 0 : 1)
    held[environment, default: [:]][key] = new
    count += delta
    guard let folder else { return }
    do {
      try folder.replace(Self.fileName, with: encoded())
    } catch {
      held[environment, default: [:]][key] = old.isEmpty ? nil : old
      count -= delta
      throw error
    }
  }

  /// `{"version": 1, "environments": {env: {kind: {id: {name: value}}}}}`.
  private func encoded() -> [UInt8] {
    let environments = JSON.object()
    for (environment, entities) in held where !entities.isEmpty {
      let kinds = JSON.object()
      for (key, values) in entities {
        let ids = kinds[key.kind] ?? JSON.object()
        let object = JSON.object()
        for (name, value) in values { object.set(name, .string(value)) }
        ids.set(key.id, object)
        kinds.set(key.kind, ids)
      }
      environments.set(environment, kinds)
    }
    return JSON.object().set("version", .integer(1)).set("environments", environments).encoded() + [0x0A]
  }

  private static func parse(_ bytes: [UInt8]) -> [String: [EntityKey: [String: String]]]? {
    guard let root = try? JSON.parse(bytes), root["version"]?.integer == 1,
      let environments = root["environments"], environments.isObject
    else { return nil }
    var result: [String: [EntityKey: [String: String]]] = [:]
    for (environment, kinds) in environments.members {
      guard kinds.isObject else { return nil }
      for (kind, ids) in kinds.members {
        guard ids.isObject else { return nil }
        for (id, object) in ids.members {
          guard object.isObject else { return nil }
          var values: [String: String] = [:]
          for (name, value) in object.members {
            guard let text = value.string else { return nil }
            values[name] = text
          }
          result[environment, default: [:]][EntityKey(kind: kind, id: id)] = values
        }
      }
    }
    return result
  }
}
