import JSONRPC

/// `exit` (LSP's): ends the process, with 0 after `shutdown` and 1 otherwise.
enum Exit: NotificationMethod {
  static let name = "exit"

  /// It takes none, but it ends the process whatever it is sent with: a client's last
  /// word is not refused.
  struct Params: MethodParams {
    static let fields: [ParamField] = []
    init(from params: borrowing ParamsReader) {}
  }
}
