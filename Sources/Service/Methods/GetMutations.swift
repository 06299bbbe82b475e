import JSON
import JSONRPC
import NetworkModels

/// `getMutations`: the ledger of intents and their outcomes, a page after `since`
/// (docs/protocol.md "getMutations").
enum GetMutations: ServiceMethod {
  static let name = "getMutations"
  static let errorCodes = ErrorCode.everyMethod
  static let defaultLimit: Int64 = 100
  static let maxLimit: Int64 = 1000

  struct Params: MethodParams {
    static let fields: [ParamField] = [
      .optional("since", .integer), .optional("limit", .integer), .optional("kind", .string),
      .optional("id", .string),
    ]
    let since: UInt64?
    let limit: Int
    let kind: String?
    let id: String?

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      let since = try params.integer(ParamKey.since)
      if let since, since < 0 { throw .invalidParams("since must be a seq ≥ 0", path: "/since") }
      let limit = try params.integer(ParamKey.limit) ?? GetMutations.defaultLimit
      guard (1...GetMutations.maxLimit).contains(limit) else {
        throw .invalidParams("limit must be between 1 and \(GetMutations.maxLimit)", path: "/limit")
      }
      let kind = try params.string(ParamKey.kind)
      let id = try params.string(ParamKey.id)
      if id != nil && kind == nil { throw .invalidParams("an id needs a kind", path: "/kind") }
      self.init(since: since.map(UInt64.init), limit: Int(limit), kind: kind, id: id)
    }

    private init(since: UInt64?, limit: Int, kind: String?, id: String?) {
      self.since = since
      self.limit = limit
      self.kind = kind
      self.id = id
    }
  }

  /// `{entries, next, last, more, truncated}`.
  struct Result: EncodableResult {
    let page: MutationLedger.Page

    func encode(into buffer: inout [UInt8]) {
      appendLiteral(#"{"entries":["#, to: &buffer)
      for (index, entry) in page.entries.enumerated() {
        if index > 0 { buffer.append(UInt8(ascii: ",")) }
        entry.encode(into: &buffer)
      }
      appendLiteral(#"],"next":"#, to: &buffer)
      appendDecimal(Int64(page.next), to: &buffer)
      appendLiteral(#","last":"#, to: &buffer)
      appendDecimal(Int64(page.last), to: &buffer)
      appendLiteral(page.more ? #","more":true"# : #","more":false"#, to: &buffer)
      appendLiteral(page.truncated ? #","truncated":true}"# : #","truncated":false}"#, to: &buffer)
    }
  }

  static func handle(_ request: Request<GetMutations>, by service: NetmodelService) throws(ResponseError) {
    let params = request.params
    request.reply.succeed(
      Result(page: service.ledger.page(since: params.since, limit: params.limit, kind: params.kind, id: params.id)))
  }
}
