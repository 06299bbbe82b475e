import JSON
import JSONRPC

/// `initialize`: who the server is and what it speaks (docs/protocol.md "Talking to it").
enum Initialize: ServiceMethod {
  static let name = "initialize"
  static let errorCodes = ErrorCode.everyMethod

  /// LSP's params, checked for their types; the server needs none of them.
  struct Params: MethodParams {
    /// `clientInfo`, kept on the connection for its log lines and `inspect`.
    var clientName: String?
    var clientVersion: String?

    static let fields: [ParamField] = [
      .optional("processId", [.integer, .null]), .optional("clientInfo", .object),
      .optional("capabilities", .object),
    ]

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      _ = try params.integer("processId")
      if let info = try params.object("clientInfo") {
        let reader = ParamsReader(info, path: "/clientInfo")
        clientName = try reader.string("name")
        clientVersion = try reader.string("version")
      }
      _ = try params.object("capabilities")
    }
  }

  /// Written as text, not built as a jansson tree and dumped: every run of FuzzDispatch
  /// starts with a fresh service, and the tree was a hundred allocations (two per value
  /// and per member). The bytes are those the tree gave (compact, members in this
  /// order); `InitializeReplyTests` holds them to it.
  struct Result: EncodableResult {
    let instance: String
    /// Sorted, as `Dispatcher.methods` gives them.
    let methods: [String]

    func encode(into buffer: inout [UInt8]) {
      appendLiteral(#"{"serverInfo":{"name":"netmodel","version":"#, to: &buffer)
      Result.append(netmodelVersion, to: &buffer)
      appendLiteral(#","instance":"#, to: &buffer)
      Result.append(instance, to: &buffer)
      appendLiteral(#"},"protocolVersion":"#, to: &buffer)
      Result.append(protocolVersion, to: &buffer)
      appendLiteral(#","capabilities":{"methods":["#, to: &buffer)
      for (index, method) in methods.enumerated() {
        if index > 0 { buffer.append(UInt8(ascii: ",")) }
        Result.append(method, to: &buffer)
      }
      appendLiteral("]}}", to: &buffer)
    }

    /// A string as jansson writes it. What needs escaping goes through jansson itself:
    /// it writes \b, \f and \u00XX, where `appendJSONString` writes \u0008, \u000c
    /// and \u00xx. The names here never need it.
    private static func append(_ string: String, to buffer: inout [UInt8]) {
      if string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
        return JSON.string(string).encode(into: &buffer)
      }
      buffer.append(UInt8(ascii: "\""))
      buffer.append(contentsOf: string.utf8)
      buffer.append(UInt8(ascii: "\""))
    }
  }

  static func handle(_ request: Request<Initialize>, by service: NetmodelService) throws(ResponseError) {
    if request.params.clientName != nil || request.params.clientVersion != nil {
      request.connection.setClientInfo(name: request.params.clientName, version: request.params.clientVersion)
    }
    request.reply.succeed(Result(instance: service.instance, methods: service.server.dispatcher.methods))
  }
}
