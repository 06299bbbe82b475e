import JSONRPC

/// `exit` (LSP's): from the stdio owner, or from the socket client that stopped the
/// daemon (`shutdown {daemon: true}`), ends the process, with 0 after `shutdown` and 1
/// otherwise; from any other socket client, closes that connection only.
enum Exit: NotificationMethod {
  static let name = "exit"

  /// It takes none, but it does its work whatever it is sent with: a client's last
  /// word is not refused.
  struct Params: MethodParams {
    static let fields: [ParamField] = []
    init(from params: borrowing ParamsReader) {}
  }
}

extension NetmodelService {
  func exit(from connection: Connection) {
    if connection.transport == .stdio || connection.id == stopperID {
      terminate(exitCode: shutdownRequested ? 0 : 1)
    } else {
      sessionsExited += 1
      connection.closeOnceFlushed()
    }
  }
}
