import Posix
import Service

let usage = """
  netmodel \(netmodelVersion): network models for UIs, served over JSON-RPC 2.0

  Usage:
    netmodel serve [options]    serve on stdin/stdout (and a Unix socket with --socket)
    netmodel call METHOD [JSON | key=value | key:=json ...]
                                one request to a running server's socket
    netmodel watch TOPIC...     print its stateChanged notifications as JSON lines
    netmodel top [--json]       a live view of a running server's figures
    netmodel check-config FILE  check a REST backend configuration, as serve would
    netmodel --version
    netmodel --help

  Serve options:
    --socket[=PATH]             also listen on a Unix socket (default
                                $XDG_RUNTIME_DIR/netmodel/netmodel.sock, else
                                /tmp/netmodel-$UID/netmodel.sock); its folder
                                must be yours alone (mode 0700 or 0755)
    --no-stdio                  serve the socket only
    --log-level LEVEL           debug, info (default), warn, error, off; logs go to stderr
    --log-format text|json      text (default), or one JSON object a line
    --max-message-bytes N       largest accepted message (default 16777216)
    --max-unread-bytes N        replies a peer may leave unread before the server
                                stops reading its messages; also the most a batch's
                                reply holds before the rest is refused, and the largest
                                subscribe snapshot answered (default 8388608)
    --max-batch-elements N      longest batch accepted (default 10000)
    --max-pending-requests N    requests of one peer that may wait for an answer
                                before its messages are not read (default 10000)
    --shutdown-timeout-ms N     how long the final flush at exit waits for peers
                                that do not read (default 3000)
    --state-dir DIR             where state is kept (default $XDG_STATE_HOME/netmodel):
                                journal.log (intents, the local backend's follows), versions;
                                yours alone, as the socket's folder
    --max-age-ms N              how old a confirmed state may be and still answer
                                getFollowState from memory (default 30000)
    --when-exhausted MODE       rollback (default): a mutation whose retries ran out
                                rolls back; queue: it stays pending until the backend answers
    --simulate SPEC             wrap the backend with delays and failures:
                                latency=MS,jitter=MS,failure=RATE[,status=CODE]
    --seed N                    make --simulate and retry jitter reproducible
    --backend local|rest        local (default): follows kept under the state folder;
                                rest: an HTTP API described by --config
    --config FILE               the REST configuration (schema/backend.schema.json);
                                a bad file stops the server with exit code 2
    --environment NAME          which of the configuration's base URLs to use
    --max-entities N            entities kept in memory beyond those something holds;
                                the least recently used go first (default 100000)
    --entity-idle-ms N          an entity nothing holds goes after this long unused
                                (default 600000; 0: only the count evicts)
    --max-lists N               lists kept beyond those subscribed or loading (default 256)
    --list-idle-ms N            a list nobody subscribes to goes after this long unused
                                (default 600000; 0: only the count evicts)
    --max-api-calls-per-second N
                                rest backend: requests a second at most (default 200;
                                0: no limit)

  Started by systemd (netmodel.socket), serve takes the listening socket it is passed
  (LISTEN_PID, LISTEN_FDS) instead of making one; see netmodel(1).

  Framing is detected per connection: Content-Length headers (LSP) or one JSON
  message per line. The methods are described by `rpc.discover` and schema/openrpc.json.

  """

/// Exit code 2 when the options are wrong.
func serveAndExit(options arguments: ArraySlice<String>) -> Never {
  do {
    let options = try ServeOptions(arguments: arguments)
    Process.exit(serve(options))
  } catch {
    try? FileDescriptor.standardError.writeAll("netmodel: \(error.message)\nTry 'netmodel --help'.\n")
    Process.exit(2)
  }
}

Process.ignoreBrokenPipes()
var arguments = CommandLine.arguments.dropFirst()
let command = arguments.first ?? "serve"
switch command {
case "--help", "-h", "help":
  try? FileDescriptor.standardOutput.writeAll(usage)
  Process.exit(0)
case "--version", "-V", "version":
  try? FileDescriptor.standardOutput.writeAll("netmodel \(netmodelVersion)\n")
  Process.exit(0)
case "call":
  Process.exit(runCall(arguments.dropFirst()))
case "watch":
  Process.exit(runWatch(arguments.dropFirst()))
case "top":
  Process.exit(runTop(arguments.dropFirst()))
case "check-config":
  Process.exit(runCheckConfig(arguments.dropFirst()))
case "serve":
  if !arguments.isEmpty { arguments = arguments.dropFirst() }
  if arguments.contains("--help") || arguments.contains("-h") {
    try? FileDescriptor.standardOutput.writeAll(usage)
    Process.exit(0)
  }
  serveAndExit(options: arguments)
default:
  if command.hasPrefix("--") {
    // Options without a command: `netmodel --socket` means `netmodel serve --socket`.
    serveAndExit(options: arguments)
  }
  try? FileDescriptor.standardError.writeAll("netmodel: unknown command \(command)\nTry 'netmodel --help'.\n")
  Process.exit(2)
}
