import JSON
import JSONRPC

/// `initialize`: who the server is and what it speaks (README "Talking to it").
enum Initialize: ServiceMethod {
  static let name = "initialize"
  static let errorCodes = ErrorCode.everyMethod
  typealias Result = JSON

  /// LSP's params, checked for their types; the server needs none of them.
  struct Params: MethodParams {
    static let fields: [ParamField] = [
      .optional("processId", [.integer, .null]), .optional("clientInfo", .object),
      .optional("capabilities", .object),
    ]

    init(from params: ParamsReader) throws(ResponseError) {
      _ = try params.integer("processId")
      _ = try params.object("clientInfo")
      _ = try params.object("capabilities")
    }
  }

  static func handle(_ request: Request<Initialize>, by service: NetmodelService) throws(ResponseError) {
    let methods = JSON.array()
    for method in service.server.dispatcher.methods { methods.append(.string(method)) }
    request.reply.succeed(
      JSON.object()
        .set(
          "serverInfo",
          JSON.object().set("name", .string("netmodel")).set("version", .string(netmodelVersion))
            .set("instance", .string(service.instance))
        )
        .set("protocolVersion", .string(protocolVersion))
        .set("capabilities", JSON.object().set("methods", methods)))
  }
}
