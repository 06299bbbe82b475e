import JSON
import JSONRPC
import NetworkModels

/// `subscribe`: `stateChanged` notifications for entities and lists, and their states
/// now (README "Subscriptions").
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

  static func handle(_ request: Request<Subscribe>, by service: NetmodelService) throws(ResponseError) {
    var named: [SubscriptionHub.Topic] = []
    for (index, value) in request.params.topics.elements.enumerated() {
      named.append(try service.topic(value, path: "/topics/\(index)"))
    }
    let topics = SubscriptionHub.Topic.distinct(named)
    let modelTopics = topics.compactMap(\.modelTopic)
    // Gathered before anything is subscribed: a snapshot too large to answer is
    // refused whole.
    let limit = request.connection.maxUnreadBytes
    var snapshot = Snapshot(limit: limit)
    service.models.snapshot(for: modelTopics) { part in
      snapshot.append(part)
      return !snapshot.isOverLimit
    }
    if snapshot.isOverLimit { throw Self.snapshotTooLarge(limit: limit) }
    let subscription = service.subscriptions.subscribe(topics, on: request.connection)
    service.models.subscribed(modelTopics)
    if topics.contains(where: { if case .stats = $0 { true } else { false } }) {
      service.statsSubscribed(subscription)
    }
    request.reply.succeed(Result(subscription: subscription.id, snapshot: snapshot, instance: service.instance))
  }
}
