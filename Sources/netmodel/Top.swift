import JSON
import Posix

let topUsage = """
  Usage: netmodel top [--socket=PATH] [--json]

  A live view of a running server: the counters (entities pending and failed, the
  outbox, the ledger's failed intents, backend calls in flight per endpoint with
  their latency, retries and rollbacks per second, lists and preload queues), and
  the items behind them. It
  subscribes to the server's `stats` topic (pushed at most once a second, when the
  figures change), asks `inspect` every second, and redraws every second, fitted to
  the terminal's size (redrawn when it changes). Colour when stdout is a terminal and
  NO_COLOR is not set. Keys:
    o e l c h   views: overview, entities (pending, reading, failed, requested,
                waiting for credentials, and the outbox), lists, connections (client,
                transport, subscriptions, unsent bytes), holds (rate limit, HTTP queue)
    tab         the next view
    k / a       filter entities and intents by the next kind / show all kinds
    s           the next sort order of the view
    q, Ctrl-C   quit (exit 0); exit 1 when the server goes away
  --json prints each pushed Stats object as one line of JSON instead, with a
  "rates" member (per-second changes since the previous line) and an "inspection"
  member (the server's `inspect` answer at that moment; absent if it has none).
  Options may come in any order. An error the server could not tie to the request
  (id null) ends top with that error (exit 1).

  """

func runTop(_ arguments: ArraySlice<String>) -> Int32 {
  if helpRequested(arguments, usage: topUsage) { return 0 }
  let options: ClientOptions
  do {
    options = try ClientOptions(arguments, command: "top", accepted: [.socket, .json])
  } catch {
    return fail("\(error.message)\n\(topUsage)", code: 2)
  }
  if let operand = options.operands.first {
    return fail("top: unexpected argument \(operand)\n\(topUsage)", code: 2)
  }
  // Read from a descriptor, not delivered: the terminal is restored before the exit.
  guard let signals = try? SignalFD(signals: [SignalFD.interrupt, SignalFD.terminate, SignalFD.windowChange]) else {
    return fail("top: cannot watch signals", code: 1)
  }
  var client: RPCClient
  do {
    client = try RPCClient(socketPath: options.socket)
    let id = try client.send(
      method: "subscribe",
      params: JSON.object().set("topics", JSON.array().append(JSON.object().set("type", .string("stats")))))
    let reply = try client.reply(to: id)
    if let error = reply["error"] { return failWithErrorReply(error) }
  } catch {
    return fail(error.description, code: 1)
  }
  defer { client.close() }
  var top = TopView(json: options.json)
  top.start()
  let outcome = top.run(&client, signals: signals)
  top.stop()
  if case .failed(let message) = outcome { return fail(message, code: 1) }
  return 0
}

/// What `top` shows and how: the last two snapshots (for rates), and the terminal it
/// took over.
struct TopView {
  enum Outcome {
    case quit
    case failed(String)
  }

  let json: Bool
  let screen: Bool
  let colour: Bool
  private var latest: JSON?
  private var previous: JSON?
  private var latestAt = ContinuousClock.now
  /// Stdout is gone (`top --json | head -1`): nobody is watching any more.
  private var outputGone = false
  private var keys: Terminal.KeyByKey?
  private var controls = TopControls()
  private var inspection: JSON?
  /// The `inspect` request under way, and whether the server has the method.
  private var inspectID: Int64?
  private var inspectUnknown = false
  /// The server's uptime when the latest figures or inspection came, and then.
  private var uptime: (ms: Int64, at: ContinuousClock.Instant)?
  /// Kinds `k` steps through: those of the entities and intents inspected so far.
  private var kinds: [String] = []

  init(json: Bool) {
    self.json = json
    screen = !json && Terminal.isTerminal(.standardOutput)
    let noColor = Process.environment("NO_COLOR") ?? ""
    colour = screen && noColor.isEmpty
  }

  /// The alternate screen and keys read one by one, so q quits without Enter.
  mutating func start() {
    guard screen else { return }
    keys = Terminal.KeyByKey(.standardInput)
    write("\u{1B}[?1049h\u{1B}[?25l")
  }

  /// Gives the terminal back as it was: the shell after `top` must echo and edit.
  mutating func stop() {
    guard screen else { return }
    write("\u{1B}[?25h\u{1B}[?1049l")
    keys?.restore()
  }

  mutating func run(_ client: inout RPCClient, signals: SignalFD) -> Outcome {
    var nextDraw = ContinuousClock.now
    while true {
      do {
        while let message = try client.bufferedMessage() {
          if RPCClient.isUnmatchedError(message), let error = message["error"] { return .failed(errorText(error)) }
          if let id = inspectID, message["id"]?.integer == id {
            inspectID = nil
            takeInspection(message)
            continue
          }
          guard message["method"]?.string == "statsChanged", let stats = message["params"]?["stats"] else { continue }
          take(stats)
          if json { askInspect(&client) }
        }
      } catch {
        return .failed(error.description)
      }
      if outputGone { return .quit }
      if screen && ContinuousClock.now >= nextDraw {
        askInspect(&client)
        draw()
        nextDraw = ContinuousClock.now + .seconds(1)
      }
      let ready: [Bool]
      do {
        ready = try Poll.readable(
          [client.socket, signals.fd, screen && keys != nil ? .standardInput : nil],
          timeout: screen ? ContinuousClock.now.duration(to: nextDraw) : nil)
      } catch {
        return .failed("top: poll failed (errno \(error.code))")
      }
      if ready[1], let signal = signals.next() {
        if signal == SignalFD.windowChange {
          nextDraw = ContinuousClock.now
        } else {
          return .quit
        }
      }
      if ready[2] {
        var key: UInt8 = 0
        let count = (try? FileDescriptor.standardInput.read(into: &key, count: 1)) ?? 0
        if count == 1 && (key == UInt8(ascii: "q") || key == UInt8(ascii: "Q")) { return .quit }
        let kind = controls.kind
        if count == 1 && controls.handle(key, kinds: kinds) {
          // Another kind is another question: the rows shown so far are not its answer.
          if !(controls.kind ?? "").hasSameBytes(as: kind ?? "") || (controls.kind == nil) != (kind == nil) {
            inspection = nil
            inspectID = nil
            askInspect(&client)
          }
          nextDraw = ContinuousClock.now
        }
      }
      if ready[0] {
        do {
          if try !client.readSocket() { return .failed("the server closed the connection") }
        } catch {
          return .failed(error.description)
        }
      }
    }
  }

  /// Asks `inspect` (what the views show) unless an answer is awaited: as many items as
  /// the screen has rows, of the chosen kind.
  private mutating func askInspect(_ client: inout RPCClient) {
    guard inspectID == nil, !inspectUnknown else { return }
    let params = JSON.object().set("limit", .integer(max(20, min(1000, terminalSize().rows))))
    if let kind = controls.kind { params.set("kind", .string(kind)) }
    inspectID = try? client.send(method: "inspect", params: params)
  }

  private mutating func takeInspection(_ reply: JSON) {
    guard let result = reply["result"] else {
      // A server without `inspect` (-32601): the counters are all it shows.
      if reply["error"]?["code"]?.integer == -32601 { inspectUnknown = true }
      if json, let pending = pendingLine {
        write(pending.text + "\n")
        pendingLine = nil
      }
      return
    }
    inspection = result
    if let ms = result["uptimeMs"]?.integer { uptime = (ms, .now) }
    // Kinds from the items listed, not the endpoints' names: `list.following` names a
    // list, not a kind.
    if controls.kind == nil {
      for section in ["entities", "outbox"] {
        for item in result[section]?["list"]?.elements ?? [] { learn(kind: item["kind"]?.string) }
      }
    }
    if json, let pending = pendingLine {
      write(pending.set("inspection", result).text + "\n")
      pendingLine = nil
    }
  }

  private mutating func learn(kind: String?) {
    guard let kind, !kind.isEmpty, !kinds.contains(where: { $0.hasSameBytes(as: kind) }) else { return }
    kinds.append(kind)
    kinds.sort { $0.precedesByBytes($1) }
  }

  /// A --json line waiting for its `inspect` answer.
  private var pendingLine: JSON?

  private mutating func take(_ stats: JSON) {
    previous = latest
    latest = stats
    latestAt = ContinuousClock.now
    if let ms = stats["uptimeMs"]?.integer { uptime = (ms, latestAt) }
    if json {
      let line = stats.set("rates", rates().json)
      if inspectUnknown {
        write(line.text + "\n")
      } else {
        // The previous line's answer never came: it goes out as it is.
        if let pending = pendingLine { write(pending.text + "\n") }
        pendingLine = line
      }
    } else if !screen {
      // Not a terminal and not --json: one plain frame per push, for a log.
      write(TopScreen(stats: stats, rates: rates(), size: (rows: 1000, columns: 200), colour: false).text + "\n")
    }
  }

  private mutating func draw() {
    guard let latest else {
      write("\u{1B}[H\u{1B}[2Jnetmodel top: waiting for the server's figures…")
      return
    }
    let now = uptime.map { $0.ms + Int64($0.at.duration(to: .now) / .milliseconds(1)) }
    let frame = TopScreen(
      stats: latest, rates: rates(), size: terminalSize(), colour: colour, inspection: inspection, controls: controls,
      uptimeMs: now, nowSeconds: Process.wallClockSeconds(), legend: true)
    write("\u{1B}[H" + frame.text)
  }

  /// Per second, from the last two pushes; zero once the latest is a second old, since
  /// the server pushes only when figures change.
  private func rates() -> TopRates {
    guard let latest, let previous, json || latestAt.duration(to: .now) < .milliseconds(1500) else {
      return TopRates()
    }
    return TopRates(from: previous, to: latest)
  }

  private mutating func write(_ text: String) {
    do {
      try FileDescriptor.standardOutput.writeAll(text)
    } catch {
      outputGone = true
    }
  }
}

/// Rows and columns of the terminal on stdout (TIOCGWINSZ), else $LINES/$COLUMNS, else
/// 24×80.
func terminalSize() -> (rows: Int, columns: Int) {
  if let size = Terminal.size(of: .standardOutput) { return size }
  let rows = Process.environment("LINES").flatMap { Int($0) } ?? 24
  let columns = Process.environment("COLUMNS").flatMap { Int($0) } ?? 80
  return (rows, columns)
}
