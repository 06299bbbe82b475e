import Posix
import Service

/// Made when asked for: a global of main.swift is set at every start, whatever the
/// command, and the serve options' table is the most of that start.
var usage: String {
  """
  netmodel \(netmodelVersion): network models for UIs, served over JSON-RPC 2.0

  Usage:
    netmodel serve [options]    serve on stdin/stdout (and a Unix socket with --socket)
    netmodel call METHOD [JSON | key=value | key:=json ...]
                                one request to a running server's socket
    netmodel watch TOPIC...     print its stateChanged notifications as JSON lines
    netmodel stop               stop the daemon listening on the socket
    netmodel top [--json]       a live view of a running server's figures
    netmodel check-config FILE  check a REST backend configuration or a netmodel.json,
                                as serve would
    netmodel --version          the version and the commit built (also -V, -v)
    netmodel --help

  Options given before the command are the command's: `netmodel --log-level debug
  serve` is `netmodel serve --log-level debug`.

  Serve options:
  \(ServeOption.usage)

  netmodel.json takes the serve options too, by their long names ({"backend": "rest",
  "config": "~/github.json"}), all but socket, no-stdio, config-file and print-config;
  the command line overrides it. See netmodel(1) and schema/serve-config.schema.json.

  Started by systemd (netmodel.socket), serve takes the listening socket it is passed
  (LISTEN_PID, LISTEN_FDS) instead of making one; see netmodel(1).

  Framing is detected per connection: Content-Length headers (LSP) or one JSON
  message per line. The methods are described by `rpc.discover` and schema/openrpc.json.

  """
}

/// Exit code 2 when the options are wrong.
func serveAndExit(options arguments: ArraySlice<String>) -> Never {
  do {
    let options = try ServeOptions.load(arguments: arguments)
    if options.printConfig {
      try? FileDescriptor.standardOutput.writeAll(options.printout)
      Process.exit(0)
    }
    Process.exit(serve(options))
  } catch {
    try? FileDescriptor.standardError.writeAll("netmodel: \(error.message)\nTry 'netmodel --help'.\n")
    Process.exit(2)
  }
}

let commands = ["serve", "call", "watch", "top", "check-config", "help", "version"]

/// `netmodel --log-level debug serve …`: options before the command go after it. Which
/// leading words are options' values is told by the serve table (`--log-level` takes
/// one, `--socket` only after `=`). Without a command word, the options are serve's;
/// a word that is no serve option (`--version`, `--help`) leaves the order as it is.
func commandFirst(_ arguments: ArraySlice<String>) -> ArraySlice<String> {
  var index = arguments.startIndex
  while index < arguments.endIndex, arguments[index].utf8.starts(with: "--".utf8) {
    let (name, inline) = ServeOptions.split(arguments[index])
    guard let option = ServeOption.named(String(decoding: name.utf8.dropFirst(2), as: UTF8.self)) else {
      return arguments
    }
    index += inline == nil && option.takesValue ? 2 : 1
  }
  guard index > arguments.startIndex, index < arguments.endIndex,
    commands.contains(where: { $0.utf8.elementsEqual(arguments[index].utf8) })
  else { return arguments }
  return [arguments[index]] + arguments[arguments.startIndex..<index] + arguments[(index + 1)...]
}

Process.ignoreBrokenPipes()
var arguments = commandFirst(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "serve"
switch command {
case "--help", "-h", "help":
  try? FileDescriptor.standardOutput.writeAll(usage)
  Process.exit(0)
case "--version", "-V", "-v", "version":
  // -v too: what many tools take it for, and netmodel has no verbose flag (--log-level is).
  try? FileDescriptor.standardOutput.writeAll("netmodel \(netmodelVersion) (commit \(buildCommit))\n")
  Process.exit(0)
case "call":
  Process.exit(runCall(arguments.dropFirst()))
case "watch":
  Process.exit(runWatch(arguments.dropFirst()))
case "stop":
  Process.exit(runStop(arguments.dropFirst()))
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
