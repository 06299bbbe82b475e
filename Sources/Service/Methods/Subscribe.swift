import JSON
import JSONRPC
import NetworkModels

/// `subscribe`: `stateChanged` notifications for entities and lists, and their states
/// now (docs/protocol.md "Subscriptions").
enum Subscribe: ServiceMethod {
  static let name = "subscribe"
  static let errorCodes = ErrorCode.everyMethod + [.unknownKindOrList]

  struct Params: MethodParams {
    static let fields: [ParamField] = [.required("topics", .array)]
    /// Read into topics by the handler: a topic's kind and list are checked against
    /// the backend.
    let topics: JSON

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      guard let topics = try params.value("topics"), topics.isArray, topics.count > 0 else {
        throw .invalidParams("topics must be a non-empty array", path: "/topics")
      }
      self.topics = topics
    }
  }

  struct Result: EncodableResult {
    let subscription: String
    let snapshot: Snapshot
    let instance: String

    func encode(into buffer: inout [UInt8]) {
      buffer.append(contentsOf: Array(#"{"subscription":"#.utf8))
      appendJSONString(subscription, to: &buffer)
      buffer.append(contentsOf: Array(#","snapshot":"#.utf8))
      snapshot.encode(into: &buffer)
      buffer.append(contentsOf: Array(#","instance":"#.utf8))
      appendJSONString(instance, to: &buffer)
      buffer.append(UInt8(ascii: "}"))
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
    // Gathered before anything is subscribed: a snapshot too large to answer is
    // refused whole.
    let limit = request.connection.maxUnreadBytes
    var snapshot = Snapshot(limit: limit)
    var subscription: SubscriptionHub.Subscription?
    let taken = try admitted(each: "/topics") { () throws(IndexedAdmissionProblem) in
      try service.models.subscribe(
        modelTopics(topics),
        snapshot: { part in
          snapshot.append(part)
          return !snapshot.isOverLimit
        },
        accepted: { subscription = service.subscriptions.subscribe(topics.map(\.element), on: request.connection) })
    }
    guard taken, let subscription else { throw Self.snapshotTooLarge(limit: limit) }
    if topics.contains(where: { if case .stats = $0.element { true } else { false } }) {
      service.statsSubscribed(subscription)
    }
    request.reply.succeed(Result(subscription: subscription.id, snapshot: snapshot, instance: service.instance))
  }

  /// The topics the models watch, each with its place in the request.
  private static func modelTopics(
    _ topics: some Sequence<(offset: Int, element: SubscriptionHub.Topic)>
  ) -> [(index: Int, topic: Models.Topic)] {
    topics.compactMap { place, topic in topic.modelTopic.map { (index: place, topic: $0) } }
  }
}
