import JSON
import JSONRPC

/// `unsubscribe`: ends one subscription of this connection.
enum Unsubscribe: ServiceMethod {
  static let name = "unsubscribe"
  static let errorCodes = ErrorCode.everyMethod

  struct Params: MethodParams {
    static let fields: [ParamField] = [.required("subscription", .string)]
    let subscription: String

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      guard let subscription = try params.string("subscription") else {
        throw .invalidParams("subscription is required", path: "/subscription")
      }
      self.subscription = subscription
    }
  }

  /// `{"ok": true}`: the subscription is gone.
  struct Result: EncodableResult {
    func encode(into buffer: inout [UInt8]) { appendLiteral(#"{"ok":true}"#, to: &buffer) }
  }

  static func handle(_ request: Request<Unsubscribe>, by service: NetmodelService) throws(ResponseError) {
    let id = request.params.subscription
    guard service.subscriptions.unsubscribe(id, on: request.connection) else {
      throw .invalidParams("no subscription \(id) on this connection", path: "/subscription")
    }
    request.reply.succeed(Result())
  }
}
