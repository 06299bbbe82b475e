import JSON
import Posix

let stopUsage = """
  Usage: netmodel stop [--socket=PATH] [--timeout=MS]

  Stops the daemon listening on the socket (as `gpgconf --kill` does), whoever started
  it: sends `shutdown {"daemon": true}` then `exit`, and returns once the process has
  ended (its last descriptor closed). Only the user the daemon runs as may stop it.
  Requests other clients still wait for are answered -32005; their connections close;
  accepted intents stay in the journal and are sent at the next start. A host's own
  `shutdown` and `exit` on a socket end only its session.
  The socket defaults to the server's default path (see `netmodel --help`). Under
  socket activation (netmodel.socket) a stopped daemon is started again by the next
  connection; `systemctl --user stop netmodel.socket netmodel.service` stops both.
  --timeout=MS gives up waiting after MS milliseconds (exit 1).
  Exit status: 0 stopped; 1 refused, or not stopped in time; 2 a usage error;
  3 no server listens on the socket (nothing to stop).

  """

func runStop(_ arguments: ArraySlice<String>) -> Int32 {
  if helpRequested(arguments, usage: stopUsage) { return 0 }
  let options: ClientOptions
  do {
    options = try ClientOptions(arguments, command: "stop", accepted: [.socket, .timeout])
  } catch {
    return fail("\(error.message)\n\(stopUsage)", code: 2)
  }
  guard options.operands.isEmpty else { return fail("stop takes no operands\n\(stopUsage)", code: 2) }
  // Tried first: a socket nobody answers is no daemon to stop, and saying so apart
  // lets a script tell "was not running" from "would not stop". Any other failure
  // (no right to the folder) is the client's to report.
  do {
    try UnixSocket.connect(path: options.socket).close()
  } catch  where error.code == Errno.noEntry || error.code == Errno.connectionRefused {
    return fail("no server listens on \(options.socket); nothing to stop", code: 3)
  } catch {}
  do {
    var client = try RPCClient(socketPath: options.socket)
    defer { client.close() }
    if let timeout = options.timeout { client.deadline = ContinuousClock.now + .milliseconds(timeout) }
    let id = try client.send(method: "shutdown", params: JSON.object().set("daemon", .bool(true)))
    let reply = try client.reply(to: id)
    if let error = reply["error"] { return failWithErrorReply(error) }
    try client.notify(method: "exit")
    // The daemon leaves this connection open until the process ends: the end of
    // input means it is gone, its state folder free for the next one.
    while try client.receive() != nil {}
    return 0
  } catch {
    return fail(error.description, code: 1)
  }
}
