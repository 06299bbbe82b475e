import JSON
import JSONRPC
import NetworkModels

/// `sync`: answers once every intent accepted before it has settled, or waits on what
/// the timeout does not cover, and after the notifications of those settlements were
/// written to this connection (docs/protocol.md "sync").
enum Sync: ServiceMethod {
  static let name = "sync"
  static let errorCodes = ErrorCode.everyMethod + [.requestCancelled]
  static let defaultTimeoutMs: Int64 = 10_000
  static let maxTimeoutMs: Int64 = 600_000

  struct Params: MethodParams {
    static let fields: [ParamField] = [.optional("timeoutMs", .integer)]
    let timeoutMs: Int64

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      let timeoutMs = try params.integer(ParamKey.timeoutMs) ?? Sync.defaultTimeoutMs
      guard (0...Sync.maxTimeoutMs).contains(timeoutMs) else {
        throw .invalidParams("timeoutMs must be between 0 and \(Sync.maxTimeoutMs)", path: "/timeoutMs")
      }
      self.timeoutMs = timeoutMs
    }
  }

  /// `{"settled": [...], "waiting": [...]}`, each item an entity's state and how its
  /// intent ended or why it still waits.
  struct Result: EncodableResult {
    let report: Models.SyncReport

    func encode(into buffer: inout [UInt8]) {
      appendLiteral(#"{"settled":["#, to: &buffer)
      for (index, item) in report.settled.enumerated() {
        Self.item(item.state, "outcome", item.outcome.rawValue, first: index == 0, into: &buffer)
      }
      appendLiteral(#"],"waiting":["#, to: &buffer)
      for (index, item) in report.waiting.enumerated() {
        Self.item(item.state, "reason", item.reason.rawValue, first: index == 0, into: &buffer)
      }
      appendLiteral("]}", to: &buffer)
    }

    private static func item(
      _ state: EntityState, _ name: StaticString, _ value: String, first: Bool, into buffer: inout [UInt8]
    ) {
      if !first { buffer.append(UInt8(ascii: ",")) }
      appendLiteral(#"{"kind":"#, to: &buffer)
      appendJSONString(state.key.kind, to: &buffer)
      appendLiteral(#","id":"#, to: &buffer)
      appendJSONString(state.key.id, to: &buffer)
      appendLiteral(",\"", to: &buffer)
      appendLiteral(name, to: &buffer)
      appendLiteral("\":", to: &buffer)
      appendJSONString(value, to: &buffer)
      appendLiteral(#","state":"#, to: &buffer)
      state.encode(into: &buffer)
      buffer.append(UInt8(ascii: "}"))
    }
  }

  static func handle(_ request: Request<Sync>, by service: NetmodelService) throws(ResponseError) {
    let responder = request.reply.responder
    let connection = request.connection
    service.models.sync(timeout: .milliseconds(request.params.timeoutMs)) { [weak service] report in
      // The settlements' notifications first: a slow reader's queue is written out before.
      guard let service else { return responder.succeed(Result(report: report)) }
      service.subscriptions.afterQueuedNotifications(of: connection) { responder.succeed(Result(report: report)) }
    }
  }
}
