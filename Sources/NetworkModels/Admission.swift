import JSON

/// Why the models refuse a request's entity or list before anything changes: no
/// state, version, notification or intent comes of it. The service maps each case to
/// its JSON-RPC error in one place (`ResponseError(_:under:)`).
public enum AdmissionProblem: Error, Equatable, Sendable {
  /// A value the request may not carry (-32602): its JSON Pointer relative to the
  /// entity's or list's object (`/id`, `/params/gene`), and why.
  case invalid(path: String, reason: String)
  /// The backend cannot have entities of this kind (-32004).
  case unknownKind(String, reason: String)
  /// The backend has no list of this name (-32004); `known` names those it has, in
  /// byte order (`ListSource.listNames`).
  case unknownList(String, known: [String])
}

/// A request's refusal of the entity or topic at `index` among those it names.
public struct IndexedAdmissionProblem: Error, Equatable, Sendable {
  public let index: Int
  public let problem: AdmissionProblem

  public init(index: Int, problem: AdmissionProblem) {
    self.index = index
    self.problem = problem
  }
}

extension EntityKey {
  /// A key from a request's `kind` and `id`, refused when either breaks the form
  /// docs/protocol.md "EntityState" gives them.
  public init(validatingKind kind: String, id: String) throws(AdmissionProblem) {
    if let problem = EntityKey.problem(kind: kind, id: id) {
      throw .invalid(path: "/" + problem.field, reason: problem.reason)
    }
    self.init(kind: kind, id: id)
  }
}

extension ListKey {
  /// A list param's longest value, in bytes: params are a list's identity, kept while
  /// it is in memory, so they must stay small.
  public static let maxParamBytes = 1024
}

/// What the models let in: an entity of a kind the backend has, with an id it can
/// send; a list it has, with the params it takes, each small and sendable. Checked
/// once, here, before anything reaches the store, the lists or the backend.
extension Models {
  /// `key`, refused when the backend cannot have its kind or cannot send its id (a
  /// dot segment).
  public func admit(_ key: EntityKey) throws(AdmissionProblem) {
    if let reason = backend.kindProblem(key.kind) { throw .unknownKind(key.kind, reason: reason) }
    if let placeholders, let problem = placeholders.validatePlaceholders(kind: key.kind, id: key.id) {
      throw .invalid(path: problem.path, reason: problem.reason)
    }
  }

  /// An entity topic: every entity of `kind`, or one (`id`). The id is checked for its
  /// form only when given.
  public func admit(kind: String, id: String?) throws(AdmissionProblem) {
    if let problem = EntityKey.problem(kind: kind, id: id ?? "x") {
      throw .invalid(path: "/" + problem.field, reason: problem.reason)
    }
    if let reason = backend.kindProblem(kind) { throw .unknownKind(kind, reason: reason) }
    if let id, let placeholders, let problem = placeholders.validatePlaceholders(kind: kind, id: id) {
      throw .invalid(path: problem.path, reason: problem.reason)
    }
  }

  /// The refusal of a list the backend does not have, naming those it has.
  func unknownList(_ name: String) -> AdmissionProblem {
    .unknownList(name, known: (lists.source?.listNames ?? []).sorted { $0.precedesByBytes($1) })
  }

  /// A list's identity, refused when the backend has no such list, or a param it
  /// needs is missing, it does not take one given, or one is too long or unsendable.
  public func admit(list key: ListKey, params values: [String: String]) throws(AdmissionProblem) {
    guard let description = lists.source?.listDescription(key.name) else { throw unknownList(key.name) }
    for name in description.requiredParams where values[name] == nil {
      throw .invalid(path: JSONPointer.member(name, of: "/params"), reason: "list \(key.name) needs params.\(name)")
    }
    // Sorted: the error names the same param whatever the member order.
    for (name, value) in values.sorted(by: { $0.key < $1.key }) {
      let path = JSONPointer.member(name, of: "/params")
      guard description.requiredParams.contains(where: { $0.hasSameBytes(as: name) }) else {
        let taken = description.requiredParams.isEmpty ? "none" : description.requiredParams.joined(separator: ", ")
        throw .invalid(path: path, reason: "list \(key.name) takes no param \(name) (its params: \(taken))")
      }
      guard value.utf8.count <= ListKey.maxParamBytes else {
        throw .invalid(path: path, reason: "params.\(name) is longer than \(ListKey.maxParamBytes) bytes")
      }
    }
    if let placeholders, let problem = placeholders.validatePlaceholders(list: key.name, params: values) {
      throw .invalid(path: problem.path, reason: problem.reason)
    }
  }

  /// Every key of a request's list, the first refused named by its index.
  public func admit(_ keys: [EntityKey]) throws(IndexedAdmissionProblem) {
    for (index, key) in keys.enumerated() {
      do { try admit(key) } catch { throw IndexedAdmissionProblem(index: index, problem: error) }
    }
  }

  /// Every topic of a `subscribe`, the first refused named by its index. A wildcard
  /// over every kind names nothing to check.
  public func admit(_ topics: [(index: Int, topic: Topic)]) throws(IndexedAdmissionProblem) {
    for (index, topic) in topics {
      do {
        switch topic {
        case .entity(let kind?, let id): try admit(kind: kind, id: id)
        case .entity(nil, _): break
        case .list(let key, let params): try admit(list: key, params: params)
        }
      } catch {
        throw IndexedAdmissionProblem(index: index, problem: error)
      }
    }
  }
}
