import JSON
import JSONRPC
import Posix

/// `shutdown` (LSP's), per session: from the stdio owner it prepares the process's
/// exit, as in LSP; from a socket client it ends that client's session only, so one
/// host closing does not stop a daemon others share. `daemon: true` stops the daemon
/// from a socket client of its own user (`netmodel stop`). docs/operations.md "Sessions and
/// stopping the daemon".
enum Shutdown: ServiceMethod {
  static let name = "shutdown"
  static let errorCodes = ErrorCode.everyMethod
  typealias Result = NullResult

  struct Params: MethodParams {
    static let fields: [ParamField] = [.optional("daemon", .boolean)]
    /// Stop the daemon, not only this session.
    let daemon: Bool

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      daemon = try params.bool(ParamKey.daemon) ?? false
      // Anything else is a typo to show, as when it took no params: a `{"deamon": true}`
      // passed over would end only the session while its sender thinks it stopped the daemon.
      if let tree = params.tree, tree.isObject,
        let other = tree.members.first(where: { !$0.key.hasSameBytes(as: "daemon") })
      {
        throw .invalidParams(
          "unexpected param \(other.key); shutdown takes only daemon", path: JSONPointer.member(other.key, of: ""))
      }
    }
  }

  static func handle(_ request: Request<Shutdown>, by service: NetmodelService) throws(ResponseError) {
    let connection = request.connection
    if connection.transport == .stdio {
      service.prepareExit(stoppedBy: nil)
    } else if request.params.daemon {
      try service.checkMayStop(connection)
      Log.event(.info, "daemon.stop", "a client stopped the daemon (netmodel stop)", connection.logFields)
      service.prepareExit(stoppedBy: connection)
    } else {
      connection.refusal = .sessionShutDown
    }
    request.reply.succeed(Result())
  }
}

/// `null`, as LSP's `shutdown` answers.
struct NullResult: EncodableResult {
  func encode(into buffer: inout [UInt8]) { appendLiteral("null", to: &buffer) }
}

extension ResponseError {
  /// The answer to each request a socket client sends after its own `shutdown`.
  static var sessionShutDown: ResponseError {
    ResponseError(
      .shuttingDown, "this connection's session was shut down (shutdown); the server goes on for its other clients",
      data: JSON.object().set("retryable", .bool(false)))
  }
}

extension NetmodelService {
  /// From now on every request of every peer is refused; `exit` ends the process.
  /// `stopper`, a socket peer that asked for it, ends it too when it goes, and its
  /// connection stays open until the process ends: its end of input says the daemon
  /// is gone, not only that its sockets closed.
  func prepareExit(stoppedBy stopper: Connection?) {
    shutdownRequested = true
    server.dispatcher.refusal = .shuttingDown
    guard let stopper else { return }
    stopperID = stopper.id
    stopper.staysOpenUntilProcessExit = true
  }

  /// Only the daemon's own user may stop it. The listener refuses peers of any other
  /// user already; this holds for every way a connection comes (an inherited socket,
  /// a test's peer).
  func checkMayStop(_ connection: Connection) throws(ResponseError) {
    guard let peer = connection.peerUser, peer == owner else {
      let who = connection.peerUser.map { "uid \($0)" } ?? "a peer of unknown uid"
      throw .invalidParams(
        "daemon: true is for the user the server runs as (uid \(owner)); this connection is \(who)",
        path: "/daemon")
    }
  }
}
