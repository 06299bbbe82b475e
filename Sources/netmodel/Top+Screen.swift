import JSON
import Posix

/// Per-second changes between two `stats` pushes, over the server's own time
/// (`uptimeMs`), so a push that arrived late does not make a spike.
struct TopRates {
  var requests = 0.0
  var backendCalls = 0.0
  var retries = 0.0
  var rollbacks = 0.0
  var notifications = 0.0
  /// Per `kind.endpoint`: calls finished per second, and their mean latency (ms) over
  /// the interval (nil when none finished in it).
  var endpoints: [String: (calls: Double, latencyMs: Double?)] = [:]

  init() {}

  init(from old: JSON, to new: JSON) {
    let seconds = Double(int(new, "uptimeMs") - int(old, "uptimeMs")) / 1000
    guard seconds > 0 else { return }
    func rate(_ path: String...) -> Double { Double(int(new, path) - int(old, path)) / seconds }
    requests = rate("requests", "total")
    backendCalls = rate("backend", "calls")
    retries = rate("backend", "retries")
    rollbacks = rate("backend", "rollbacks")
    notifications = rate("notifications", "sent")
    for (name, figures) in new["backend"]?["http"]?["endpoints"]?.members ?? [] {
      let before = old["backend"]?["http"]?["endpoints"]?[name]
      let finished = int(figures, "finished") - (before.map { int($0, "finished") } ?? 0)
      let latency = int(figures, "latencyTotalMs") - (before.map { int($0, "latencyTotalMs") } ?? 0)
      endpoints[name] = (Double(finished) / seconds, finished > 0 ? Double(latency) / Double(finished) : nil)
    }
  }

  var json: JSON {
    let endpointRates = JSON.object()
    for (name, figures) in endpoints.sorted(by: { $0.key < $1.key }) {
      endpointRates.set(
        name,
        JSON.object().set("calls", .real(figures.calls))
          .set("latencyMs", figures.latencyMs.map { JSON.real($0) } ?? .null()))
    }
    return JSON.object()
      .set("requests", .real(requests))
      .set("backendCalls", .real(backendCalls))
      .set("retries", .real(retries))
      .set("rollbacks", .real(rollbacks))
      .set("notifications", .real(notifications))
      .set("endpoints", endpointRates)
  }
}

private func int(_ json: JSON, _ path: String...) -> Int64 { int(json, path) }

private func int(_ json: JSON, _ path: [String]) -> Int64 {
  var value: JSON? = json
  for key in path { value = value?[key] }
  return value?.integer ?? 0
}

/// One frame of `top`, fitted to the terminal: a header, the figures, then the
/// endpoints and connections as tables, busiest first, as many rows as fit. Every
/// string of the server's is escaped (`EscapedText`): a name with ESC or a line break
/// in it (an instance, an endpoint of a hostile configuration) would drive the
/// terminal or break the screen's rows.
struct TopScreen {
  let stats: JSON
  let rates: TopRates
  let size: (rows: Int, columns: Int)
  let colour: Bool
  /// The last `inspect` answer, for the views beyond the overview and the holds line.
  var inspection: JSON? = nil
  var controls = TopControls()
  /// The server's uptime now (it moves between pushes); nil: the push's.
  var uptimeMs: Int64? = nil
  /// The wall clock, for the local times shown.
  var nowSeconds = 0.0
  /// The keys' line at the bottom (a terminal's screen, not a log's frame).
  var legend = false

  /// `  libcurl on its own thread (moved 3 times)`: where the rest backend's HTTP runs
  /// (`stats.backend.http.libcurlThread`); empty for another backend, or a server that
  /// does not say.
  static func libcurlText(_ http: JSON?) -> String {
    guard let http, let thread = http["libcurlThread"]?.string else { return "" }
    let moves = http["libcurlMoves"]?.integer ?? 0
    let times = moves == 1 ? "once" : "\(moves) times"
    switch thread {
    case "own": return "  libcurl on its own thread (moved \(times))"
    case "loop": return moves == 0 ? "  libcurl on the loop" : "  libcurl on the loop (moved to its thread \(times))"
    default: return "  libcurl on " + EscapedText.line(thread)
    }
  }

  var text: String {
    var lines: [String] = []
    let uptime = (uptimeMs ?? int(stats, "uptimeMs")) / 1000
    let memory = Double(int(stats, "residentMemoryBytes")) / 1_048_576
    lines.append(
      style(
        "netmodel top — instance \(EscapedText.line(stats["instance"]?.string ?? "?")), up \(duration(uptime)), "
          + "connections \(int(stats, "connections", "open")), \(format(memory)) MB resident", "1;7", pad: true))
    let pending = int(stats, "entitiesPending")
    let failed = int(stats, "entitiesFailed")
    lines.append(
      "entities \(int(stats, "entities"))  pending " + warn(pending, "33") + "  failed " + warn(failed, "31")
        + "  evicted \(int(stats, "entitiesEvicted"))  outbox " + warn(int(stats, "outbox"), "33")
        + "  waiting for credentials " + warn(int(stats, "waitingForCredentials"), "33"))
    lines.append(
      "per second: requests \(format(rates.requests))  backend calls \(format(rates.backendCalls))  retries "
        + warn(rates.retries, "33") + "  rollbacks " + warn(rates.rollbacks, "31") + "  notifications "
        + format(rates.notifications))
    lines.append(
      "backend: calls \(int(stats, "backend", "calls"))  retries \(int(stats, "backend", "retries"))  rollbacks "
        + "\(int(stats, "backend", "rollbacks"))  http in flight \(int(stats, "backend", "http", "inFlight"))"
        + Self.libcurlText(stats["backend"]?["http"]))
    // The ledger: failed intents are what a user who asked for them should hear of;
    // dropped entries, what a client away may have missed.
    lines.append(
      "intents in the ledger \(int(stats, "mutations", "entries"))  open \(int(stats, "mutations", "open"))  failed "
        + warn(int(stats, "mutations", "failed"), "31") + "  dropped " + warn(int(stats, "mutations", "dropped"), "33"))
    lines.append(
      "lists held \(int(stats, "lists", "held"))  page calls \(int(stats, "lists", "pageCalls"))  preload queued "
        + "\(int(stats, "preload", "queued"))  in flight \(int(stats, "preload", "inFlight"))  subscriptions "
        + "\(int(stats, "subscriptions"))")
    if let holds = inspection?["holds"], let limit = TopViews.rateLimitText(holds, nowSeconds: nowSeconds) {
      let waiting = holds["waiting"]?["total"]?.integer ?? 0
      lines.append(
        style("holds: \(EscapedText.line(holds["api"]?.string ?? "")) \(limit) · \(waiting) call(s) waiting", "33"))
    }
    lines.append("")
    let legendRows = legend ? 1 : 0
    var tables: [[String]] = []
    if controls.view == .overview {
      tables.append(endpointRows())
      tables.append(connectionRows())
    } else if let inspection {
      let body = TopViews(inspection: inspection, controls: controls, nowSeconds: nowSeconds).body(
        columns: size.columns)
      lines.append(body.title)
      tables.append(body.table.lines(columns: size.columns))
    } else {
      lines.append("waiting for the server's inspect answer…")
    }
    // The rows left are shared by the tables, each keeping its header.
    var room = size.rows - lines.count - 1 - legendRows
    for table in tables where !table.isEmpty && room > 1 {
      let shown = Array(table.prefix(room))
      lines.append(style(shown[0], "1", pad: true))
      lines.append(contentsOf: shown.dropFirst())
      lines.append("")
      room -= shown.count + 1
    }
    if legend {
      let kept = Array(lines.prefix(max(0, size.rows - 1)))
      let filler = Array(repeating: "", count: max(0, size.rows - 1 - kept.count))
      lines = kept + filler + [style(controls.legend, "7", pad: true)]
    }
    return lines.prefix(size.rows).map { fit($0) + "\u{1B}[K" }.joined(separator: "\n") + (colour ? "\u{1B}[J" : "")
  }

  private func endpointRows() -> [String] {
    let endpoints = stats["backend"]?["http"]?["endpoints"]?.members ?? []
    guard !endpoints.isEmpty else { return [] }
    let rows = endpoints.map { name, figures in
      (
        name: EscapedText.line(name), inFlight: int(figures, "inFlight"), rate: rates.endpoints[name]?.calls ?? 0,
        latency: rates.endpoints[name]?.latencyMs, last: int(figures, "latencyLastMs"),
        total: int(figures, "finished")
      )
    }.sorted { ($0.inFlight, $0.rate, $0.total, $1.name) > ($1.inFlight, $1.rate, $1.total, $0.name) }
    return [columns("ENDPOINT", "IN FLIGHT", "CALLS/S", "LATENCY MS", "LAST MS", "CALLS")]
      + rows.map {
        columns(
          $0.name, String($0.inFlight), format($0.rate), $0.latency.map(format) ?? "-", String($0.last),
          String($0.total))
      }
  }

  private func connectionRows() -> [String] {
    let rows = (stats["connections"]?["list"]?.elements ?? []).map { connection in
      (
        id: int(connection, "id"), transport: EscapedText.line(connection["transport"]?.string ?? "?"),
        subscriptions: int(connection, "subscriptions"), queued: int(connection, "queued"),
        unsent: int(connection, "unsentBytes")
      )
    }.sorted { ($0.unsent, $0.queued, $0.subscriptions, $1.id) > ($1.unsent, $1.queued, $1.subscriptions, $0.id) }
    guard !rows.isEmpty else { return [] }
    return [columns("CONNECTION", "TRANSPORT", "SUBSCRIPTIONS", "QUEUED", "UNSENT BYTES")]
      + rows.map {
        columns(String($0.id), $0.transport, String($0.subscriptions), String($0.queued), String($0.unsent))
      }
  }

  private func columns(_ first: String, _ rest: String...) -> String {
    pad(first, max(24, TerminalCells.width(of: first) + 1))
      + rest.map { pad($0, max(14, TerminalCells.width(of: $0) + 1)) }.joined()
  }

  private static func pad(_ text: String, _ width: Int) -> String { TerminalCells.padded(text, to: width) }

  private func pad(_ text: String, _ width: Int) -> String { Self.pad(text, width) }

  private func warn(_ value: Int64, _ code: String) -> String {
    value > 0 ? style(String(value), code) : String(value)
  }

  private func warn(_ value: Double, _ code: String) -> String {
    value > 0 ? style(format(value), code) : format(value)
  }

  private func style(_ text: String, _ code: String, pad: Bool = false) -> String {
    let shown = pad ? Self.pad(fit(text), size.columns) : text
    return colour ? "\u{1B}[\(code)m\(shown)\u{1B}[0m" : shown
  }

  /// Cut to the terminal's width; escape sequences take no columns.
  private func fit(_ line: String) -> String {
    var visible = 0
    var out = ""
    var inEscape = false
    for character in line {
      if character == "\u{1B}" { inEscape = true }
      if !inEscape {
        let width = TerminalCells.width(of: character)
        if visible + width > size.columns {
          visible = size.columns  // nothing after a character that did not fit
          continue
        }
        visible += width
      }
      out.append(character)
      if inEscape && character.isLetter { inEscape = false }
    }
    return out
  }

  private func duration(_ seconds: Int64) -> String {
    seconds >= 3600
      ? "\(seconds / 3600)h\(String(format2(seconds / 60 % 60)))m"
      : "\(seconds / 60)m\(format2(seconds % 60))s"
  }

  private func format2(_ value: Int64) -> String { value < 10 ? "0\(value)" : String(value) }
}

/// One decimal, without Foundation.
private func format(_ value: Double) -> String {
  let tenths = Int64((value * 10).rounded())
  return "\(tenths / 10).\(abs(tenths % 10))"
}
