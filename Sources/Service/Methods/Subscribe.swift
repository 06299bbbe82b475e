import JSON
import JSONRPC
import NetworkModels

/// `subscribe`: `stateChanged` notifications for entities and lists, and their states
/// now (docs/protocol.md "Subscriptions").
enum Subscribe: ServiceMethod {
  static let name = "subscribe"
  static let errorCodes = ErrorCode.everyMethod + [.unknownKindOrList]

  struct Params: MethodParams {
    static let fields: [ParamField] = [.required("topics", .array), .optional("since", .object)]
    /// Read into topics by the handler: a topic's kind and list are checked against
    /// the backend.
    let topics: JSON
    let since: Since?

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      guard let topics = try params.value("topics"), topics.isArray, topics.count > 0 else {
        throw .invalidParams("topics must be a non-empty array", path: "/topics")
      }
      self.topics = topics
      since = try params.value("since").map { json throws(ResponseError) in try Since(json) }
    }
  }

  /// Where a client's view of these topics stands: the `instance` it was served by, and
  /// the version up to which it has every change (docs/protocol.md "Resuming").
  struct Since {
    let instance: String
    let version: UInt64

    init(_ json: JSON) throws(ResponseError) {
      guard json.isObject else { throw .invalidParams("since must be an object", path: "/since") }
      // Bytes, not `String ==` (canonical equivalence), as every member name is compared.
      for (key, _) in json.members
      where !key.utf8.elementsEqual("instance".utf8) && !key.utf8.elementsEqual("version".utf8) {
        throw .invalidParams("since takes instance and version only", path: "/since/\(JSONPointer.token(key))")
      }
      guard let instance = json["instance"]?.string else {
        throw .invalidParams("since.instance must be a string", path: "/since/instance")
      }
      guard let version = json["version"]?.integer, version >= 0 else {
        throw .invalidParams("since.version must be an integer, 0 or more", path: "/since/version")
      }
      self.instance = instance
      self.version = UInt64(version)
    }
  }

  struct Result: EncodableResult {
    let subscription: String
    let snapshot: Snapshot
    let instance: String
    let version: UInt64
    let reset: Bool

    func encode(into buffer: inout [UInt8]) {
      buffer.append(contentsOf: Array(#"{"subscription":"#.utf8))
      appendJSONString(subscription, to: &buffer)
      buffer.append(contentsOf: Array(#","snapshot":"#.utf8))
      snapshot.encode(into: &buffer)
      buffer.append(contentsOf: Array(#","instance":"#.utf8))
      appendJSONString(instance, to: &buffer)
      buffer.append(contentsOf: Array(#","version":"#.utf8))
      appendDecimal(Int64(version), to: &buffer)
      appendLiteral(reset ? #","reset":true}"# : #","reset":false}"#, to: &buffer)
    }
  }

  /// Every topic is read before the models admit any: a refusal names the first topic
  /// that breaks, whether its form (here) or what it names (the models) is wrong.
  static func handle(_ request: Request<Subscribe>, by service: NetmodelService) throws(ResponseError) {
    var named: [SubscriptionHub.Topic] = []
    var malformed: ResponseError?
    for (index, value) in request.params.topics.elements.enumerated() {
      do throws(ResponseError) {
        named.append(try service.topic(value, path: "/topics/\(index)"))
      } catch {
        malformed = error
        break
      }
    }
    if let malformed {
      try admitted(each: "/topics") { () throws(IndexedAdmissionProblem) in
        try service.models.admit(modelTopics(named.enumerated()))
      }
      throw malformed
    }
    let topics = SubscriptionHub.Topic.distinctPlaces(named)
    let after = request.params.since.flatMap { resumable($0, topics.map(\.element), service) }
    // Gathered before anything is subscribed: a snapshot too large to answer is
    // refused whole.
    let limit = request.connection.maxUnreadBytes
    var snapshot = Snapshot(limit: limit)
    var subscription: SubscriptionHub.Subscription?
    let taken = try admitted(each: "/topics") { () throws(IndexedAdmissionProblem) in
      try service.models.subscribe(
        modelTopics(topics),
        snapshot: { part in
          if let after, part.version <= after { return true }
          snapshot.append(part)
          return !snapshot.isOverLimit
        },
        accepted: { subscription = service.subscriptions.subscribe(topics.map(\.element), on: request.connection) })
    }
    guard taken, let subscription else { throw Self.snapshotTooLarge(limit: limit) }
    if topics.contains(where: { if case .stats = $0.element { true } else { false } }) {
      service.statsSubscribed(subscription)
    }
    request.reply.succeed(
      Result(
        subscription: subscription.id, snapshot: snapshot, instance: service.instance,
        version: service.models.store.versions.newest, reset: after == nil))
  }

  /// The version after which the snapshot need only hold what changed, or nil when the
  /// whole snapshot is owed: another process served `since` (a restart, or another
  /// state folder), it names a version this run has not reached, or entities left
  /// memory after it while a wildcard topic is asked for (the client may hold states
  /// the server no longer does). Exact topics need no such care: an entity or list
  /// held again shows a version above every one before its eviction.
  private static func resumable(
    _ since: Since, _ topics: [SubscriptionHub.Topic], _ service: NetmodelService
  ) -> UInt64? {
    let store = service.models.store
    guard since.instance.utf8.elementsEqual(service.instance.utf8), since.version <= store.versions.newest else {
      return nil
    }
    let wildcard = topics.contains { if case .entity(_, nil) = $0 { true } else { false } }
    if wildcard && since.version < store.lastEvictionVersion { return nil }
    return since.version
  }

  /// The topics the models watch, each with its place in the request.
  private static func modelTopics(
    _ topics: some Sequence<(offset: Int, element: SubscriptionHub.Topic)>
  ) -> [(index: Int, topic: Models.Topic)] {
    topics.compactMap { place, topic in topic.modelTopic.map { (index: place, topic: $0) } }
  }
}
