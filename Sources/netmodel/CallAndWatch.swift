import JSON
import Posix

let callUsage = """
  Usage: netmodel call [--socket=PATH] [--timeout=MS] METHOD [JSON | key=value | key:=json ...]

  Sends one request to a running server over its Unix socket and prints the result
  as one line of JSON on stdout (exit 0), or the error on stderr (exit 1; exit 2 for
  a usage error). As in HTTPie, key=value is a string and key:=json is JSON:
    netmodel call follow kind=artist id=banksy await:=true
    netmodel call getFollowState '{"kind":"artist","id":"banksy","maxAgeMs":0}'
  The socket defaults to the server's default path (see `netmodel --help`).
  --timeout=MS gives up after MS milliseconds without the answer (exit 1), telling
  the server to cancel the request. Default: 30000 for the methods that only read
  (getFollowState, getEntity, fetchList, stats, inspect, rpc.discover, initialize,
  getMutations); the others (follow with await, …) wait as long as the server takes.
  Once a second has passed without the answer, one line on stderr says what the call
  waits for, as the server tells it (`inspect`), and again when that changes:
    waiting: https://api.github.com rate-limited until 15:04:05 (x-ratelimit-reset)
  Options may come anywhere, in any order; after `--` everything is params. An
  error the server could not tie to the request (id null: it passed the server's
  --max-message-bytes) is printed as the answer (exit 1).

  """

let watchUsage = """
  Usage: netmodel watch [--socket=PATH] [--count=N] [--until=PATH=VALUE ...] [--timeout=MS] TOPIC...

  Subscribes and prints the current state of each entity and list first (the
  subscribe snapshot, as lines of the same shape with "seq": 0), then every
  stateChanged notification's params ({"subscription","seq","state"}) as one line of
  JSON, until interrupted (exit 0), or until the server goes away (exit 1). A state
  not newer than one printed for the same entity or list is not printed again.
  TOPIC is `entity` (everything), `entity:KIND`,
  `entity:KIND/ID`, `list:NAME` (a list without params, e.g. list:following/artist),
  `stats` (the server's figures, printed as its statsChanged notifications' params), or a topic object in JSON ('{"type":"list","list":"ofGene","params":{"gene":"pop"}}').
  --socket may come anywhere among the topics; after `--` everything is a topic.

  To wait in a script (as watchman-wait does):
    --count=N       end after N changes printed (the snapshot's lines are not changes)
    --until=PATH=VALUE
                    end once a printed state, snapshot included, matches: PATH names a
                    member of the state, dotted for nested ones (error.code); VALUE is
                    JSON when it parses as JSON (true, 3, null, "true"), else the text
                    itself (id=banksy). Given several times, one state must match all.
    --timeout=MS    give up after MS milliseconds
  Exit status: 0 interrupted, matched (--until), or N changes printed (--count alone);
  1 the server closed the connection, or an error; 2 a usage error; 3 --timeout passed,
  or --count changes came and none matched --until.
    netmodel call follow kind=artist id=banksy &&
      netmodel watch --until=pending=false --timeout=10000 entity:artist/banksy

  """

/// Escaped as the log is (`EscapedText`): a message can quote the server's error text
/// or an API's, and none of it may move the cursor or forge a line of the terminal.
func fail(_ message: String, code: Int32) -> Int32 {
  try? FileDescriptor.standardError.writeAll("netmodel: \(EscapedText.line(message))\n")
  return code
}

/// Prints `usage` when the arguments ask for help.
func helpRequested(_ arguments: ArraySlice<String>, usage: String) -> Bool {
  guard arguments.contains("--help") || arguments.contains("-h") else { return false }
  try? FileDescriptor.standardOutput.writeAll(usage)
  return true
}

/// A JSON-RPC error reply as one line: `error CODE: message data`.
func errorText(_ error: JSON) -> String {
  let code = error["code"]?.integer ?? 0
  let message = error["message"]?.string ?? "error"
  let data = error["data"].map { " " + $0.text } ?? ""
  return "error \(code): \(message)\(data)"
}

/// Reports a JSON-RPC error reply on stderr; exit code 1.
func failWithErrorReply(_ error: JSON) -> Int32 { fail(errorText(error), code: 1) }

/// `call`'s `--timeout` for the methods that change nothing: a read held by an API's
/// rate limit can wait minutes, and a script should hear of it (docs/operations.md, "From the shell").
let defaultReadTimeoutMs = 30_000
let readMethods = [
  "getFollowState", "getEntity", "fetchList", "stats", "inspect", "rpc.discover", "initialize", "getMutations",
]

func runCall(_ arguments: ArraySlice<String>) -> Int32 {
  if helpRequested(arguments, usage: callUsage) { return 0 }
  let options: ClientOptions
  do {
    options = try ClientOptions(arguments, command: "call", accepted: [.socket, .timeout])
  } catch {
    return fail("\(error.message)\n\(callUsage)", code: 2)
  }
  var operands = options.operands[...]
  guard let method = operands.popFirst() else { return fail("call needs a METHOD\n\(callUsage)", code: 2) }
  do {
    let params = try paramsFromArguments(Array(operands))
    var client = try RPCClient(socketPath: options.socket)
    defer { client.close() }
    let timeout = options.timeout ?? (readMethods.contains { $0.hasSameBytes(as: method) } ? defaultReadTimeoutMs : nil)
    if let timeout { client.deadline = ContinuousClock.now + .milliseconds(timeout) }
    let id = try client.send(method: method, params: params)
    var waiting = CallWaiting(socketPath: options.socket, params: params)
    defer { waiting.close() }
    let answer = Result { () throws(RPCClient.Failure) in
      while true {
        if let reply = try client.reply(to: id, within: CallWaiting.interval) { return reply }
        waiting.check()
      }
    }
    if case .failure = answer, timeout != nil { client.cancel(id) }  // a busy server stops working on it
    let reply = try answer.get()
    if let error = reply["error"] { return failWithErrorReply(error) }
    try? FileDescriptor.standardOutput.writeAll((reply["result"]?.text ?? "null") + "\n")
    return 0
  } catch {
    return fail(error.description, code: 1)
  }
}

/// A topic from the command line: `entity`, `entity:KIND`, `entity:KIND/ID`,
/// `list:NAME`, `stats`, `mutations` or JSON.
func topic(from text: String) throws(RPCClient.Failure) -> JSON {
  if text.hasPrefix("{") {
    do {
      return try JSON.parse(text)
    } catch {
      throw RPCClient.Failure(description: "topic \(text) is not valid JSON: \(error)")
    }
  }
  if text.hasPrefix("list:"), text.count > 5 {
    return JSON.object().set("type", .string("list")).set("list", .string(String(text.dropFirst(5))))
      .set("params", .object())
  }
  if text == "stats" || text == "mutations" { return JSON.object().set("type", .string(text)) }
  let topic = JSON.object().set("type", .string("entity"))
  if text == "entity" { return topic }
  guard text.hasPrefix("entity:") else {
    throw RPCClient.Failure(
      description: "unknown topic \(text): use entity, entity:KIND, entity:KIND/ID, list:NAME, stats, mutations or JSON"
    )
  }
  let rest = text.dropFirst("entity:".count)
  if let slash = rest.firstIndex(of: "/") {
    topic.set("kind", .string(String(rest[..<slash])))
    topic.set("id", .string(String(rest[rest.index(after: slash)...])))
  } else {
    topic.set("kind", .string(String(rest)))
  }
  return topic
}

func runWatch(_ arguments: ArraySlice<String>) -> Int32 {
  if helpRequested(arguments, usage: watchUsage) { return 0 }
  let options: ClientOptions
  let condition: WatchCondition
  do {
    options = try ClientOptions(arguments, command: "watch", accepted: [.socket, .count, .until, .timeout])
    condition = try WatchCondition(options.until)
  } catch {
    return fail("\(error.message)\n\(watchUsage)", code: 2)
  }
  guard !options.operands.isEmpty else { return fail("watch needs at least one TOPIC\n\(watchUsage)", code: 2) }
  do {
    let topics = JSON.array()
    for text in options.operands { topics.append(try topic(from: text)) }
    var client = try RPCClient(socketPath: options.socket)
    defer { client.close() }
    if let timeout = options.timeout { client.deadline = ContinuousClock.now + .milliseconds(timeout) }
    let id = try client.send(method: "subscribe", params: JSON.object().set("topics", topics))
    let reply = try client.reply(to: id)
    if let error = reply["error"] { return failWithErrorReply(error) }
    // The current states first, as every client's subscription starts (docs/clients.md,
    // "the subscribe snapshot"): a script sees where things stand, not only what changes later.
    var printed = PrintedVersions()
    let name = reply["result"]?["subscription"] ?? .null()
    for state in reply["result"]?["snapshot"]?.elements ?? [] {
      let line = JSON.object().set("subscription", name).set("seq", .integer(0)).set("state", state)
      // Where things stand may be what the script waits for already.
      if printed.print(line) && condition.matches(line) { return 0 }
    }
    var changes = 0
    while let message = try client.receive() {
      if RPCClient.isUnmatchedError(message), let error = message["error"] { return failWithErrorReply(error) }
      guard let method = message["method"]?.string,
        method == "stateChanged" || method == "statsChanged" || method == "mutationOutcome",
        let params = message["params"]
      else { continue }
      guard printed.print(params) else { continue }
      if condition.matches(params) { return 0 }
      changes += 1
      if let count = options.count, changes >= count {
        if condition.isEmpty { return 0 }
        return fail("--count=\(count) reached and nothing matched --until", code: 3)
      }
    }
    // Only an interrupt, a match or a count ends a watch well; a script must see that
    // it stopped watching.
    return fail("the server closed the connection", code: 1)
  } catch {
    if error.timedOut {
      return fail("--timeout passed\(condition.isEmpty ? "" : " and nothing matched --until")", code: 3)
    }
    return fail(error.description, code: 1)
  }
}

/// The versions `watch` printed, per entity or list: a notification written before the
/// subscribe answer may carry a state the snapshot already showed (equal version),
/// which is the same state seen twice; only newer ones are printed. Keyed by bytes:
/// `String` equality would make `café` with U+00E9 and with e + U+0301 one entity, and
/// hide the second's states.
struct PrintedVersions {
  private var versions: [[UInt8]: Int64] = [:]

  /// Prints the line unless it shows a state printed already; true when printed.
  @discardableResult
  mutating func print(_ params: JSON) -> Bool {
    if let state = params["state"], let key = Self.key(state), let version = state["version"]?.integer {
      if let held = versions[key], version <= held { return false }
      versions[key] = version
    }
    // One line per state, written at once: a pipe reader sees it immediately.
    try? FileDescriptor.standardOutput.writeAll(params.text + "\n")
    return true
  }

  /// The fields length-prefixed, so no two states share a key.
  private static func key(_ state: JSON) -> [UInt8]? {
    if let list = state["list"]?.string { return key(["list", list, state["params"]?.text ?? "{}"]) }
    if let kind = state["kind"]?.string, let id = state["id"]?.string { return key(["entity", kind, id]) }
    return nil
  }

  private static func key(_ fields: [String]) -> [UInt8] {
    var bytes: [UInt8] = []
    for field in fields {
      withUnsafeBytes(of: UInt32(truncatingIfNeeded: field.utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
      bytes.append(contentsOf: field.utf8)
    }
    return bytes
  }
}
