import NetworkModels

extension SubscriptionHub.Topic {
  /// What makes two topics one: their type, kind, id, list name and params as UTF-8
  /// bytes. Swift's `String` equality is canonical equivalence, under which `café`
  /// spelt with U+00E9 and with e + U+0301 are one string; the API keeps them apart,
  /// so a subscription must too.
  var identity: SubscriptionHub.TopicIdentity {
    switch self {
    case .entity(nil, _): SubscriptionHub.TopicIdentity(tag: 0)
    case .entity(let kind?, nil): SubscriptionHub.TopicIdentity(tag: 1, kind)
    case .entity(let kind?, let id?): SubscriptionHub.TopicIdentity.entity(kind: kind, id: id)
    case .list(let key, _): SubscriptionHub.TopicIdentity(tag: 3, key.name, key.paramsText)
    case .stats: SubscriptionHub.TopicIdentity(tag: 4)
    case .mutations: SubscriptionHub.TopicIdentity(tag: 5)
    }
  }

  /// `topics` without the ones named again, in the order they were first named: a
  /// topic named 3,000 times is one topic, answered and walked once.
  static func distinct(_ topics: [Self]) -> [Self] { distinctPlaces(topics).map(\.element) }

  /// `distinct`, each topic with its place among `topics`.
  static func distinctPlaces(_ topics: [Self]) -> [(offset: Int, element: Self)] {
    var seen: Set<SubscriptionHub.TopicIdentity> = []
    return topics.enumerated().filter { seen.insert($0.element.identity).inserted }
  }
}

extension SubscriptionHub {
  /// A topic's identity as bytes: each field length-prefixed, so no two topics write
  /// the same bytes. `[UInt8]` compares and hashes byte by byte.
  struct TopicIdentity: Hashable {
    private var bytes: [UInt8]

    init(tag: UInt8, _ fields: String...) {
      bytes = [tag]
      for field in fields {
        let count = UInt32(truncatingIfNeeded: field.utf8.count)
        withUnsafeBytes(of: count.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: field.utf8)
      }
    }

    /// The identity of an exact entity topic, and of the entity itself: a wildcard's
    /// snapshot skips what an exact topic already listed.
    static func entity(kind: String, id: String) -> Self { Self(tag: 2, kind, id) }
  }
}

extension SubscriptionHub.Topic {
  /// As `netmodel watch` takes it: `entity`, `entity:KIND`, `entity:KIND/ID`,
  /// `list:NAME` (with its params after a space when it has any), `stats`, `mutations`.
  var shorthand: String {
    switch self {
    case .entity(nil, _): "entity"
    case .entity(let kind?, nil): "entity:\(kind)"
    case .entity(let kind?, let id?): "entity:\(kind)/\(id)"
    case .list(let key, _): key.paramsText == "{}" ? "list:\(key.name)" : "list:\(key.name) \(key.paramsText)"
    case .stats: "stats"
    case .mutations: "mutations"
    }
  }
}
