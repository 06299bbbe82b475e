import EventLoop
import JSON
import JSONRPC
import Posix

public let netmodelVersion = "0.1.0"
public let protocolVersion = "1.0"

/// The service: registers the JSON-RPC methods and keeps the process's lifecycle
/// (LSP's `shutdown` then `exit`). Later layers (models, backends) plug in here.
///
/// Must be used on the loop's thread.
public final class NetmodelService {
  public let server: RPCServer
  public var loop: EventLoop { server.loop }
  public private(set) var shutdownRequested = false
  /// The process's exit code once the loop stops; nil while running.
  public private(set) var exitCode: Int32?

  private lazy var discoverDocument: JSON = {
    do {
      return try JSON.parse(openRPCDocumentText)
    } catch {
      fatalError("the embedded OpenRPC document does not parse: \(error)")
    }
  }()

  public init(server: RPCServer) {
    self.server = server
    registerLifecycleMethods()
    registerStats()
  }

  /// Ends the process cleanly: write everything queued, then stop the loop.
  /// SIGTERM, SIGINT and EOF on stdin come here with 0; `exit` with 0 or 1.
  public func terminate(exitCode code: Int32) {
    guard exitCode == nil else { return }
    exitCode = code
    loop.stop()
  }

  private func registerLifecycleMethods() {
    let dispatcher = server.dispatcher
    dispatcher.gate = { [unowned self] method in
      guard self.shutdownRequested, method != "exit" else { return nil }
      return ResponseError(
        .shuttingDown, "server shutting down", data: JSON.object().set("retryable", .bool(false)))
    }
    dispatcher.register("initialize") { [unowned self] request throws(ResponseError) in
      _ = try Params(request.params)
      request.responder.succeed(self.initializeResult())
    }
    dispatcher.register("shutdown") { [unowned self] request throws(ResponseError) in
      try Params.expectNone(request.params)
      self.shutdownRequested = true
      request.responder.succeed(.null())
    }
    dispatcher.registerNotification("exit") { [unowned self] _, _ in
      self.terminate(exitCode: self.shutdownRequested ? 0 : 1)
    }
    dispatcher.register("rpc.discover") { [unowned self] request throws(ResponseError) in
      try Params.expectNone(request.params)
      request.responder.succeed(self.discoverDocument)
    }
  }

  private func initializeResult() -> JSON {
    let methods = JSON.array()
    for method in server.dispatcher.methods { methods.append(.string(method)) }
    return JSON.object()
      .set("serverInfo", JSON.object().set("name", .string("netmodel")).set("version", .string(netmodelVersion)))
      .set("protocolVersion", .string(protocolVersion))
      .set("capabilities", JSON.object().set("methods", methods))
  }
}
