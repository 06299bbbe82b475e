import JSON
import Posix

/// Which of `top`'s screens shows, and how its rows are chosen and ordered: switched by
/// keys while it runs (`TopControls.handle`).
struct TopControls {
  enum View: String, CaseIterable {
    case overview, entities, lists, connections, holds

    var key: Character {
      switch self {
      case .overview: "o"
      case .entities: "e"
      case .lists: "l"
      case .connections: "c"
      case .holds: "h"
      }
    }

    /// The orders `s` steps through, the first the default.
    var sorts: [String] {
      switch self {
      case .overview: ["busiest"]
      case .entities: ["oldest", "kind", "attempts"]
      case .lists: ["name", "items", "fetched"]
      case .connections: ["unsent", "id", "subscriptions"]
      case .holds: ["oldest", "priority"]
      }
    }
  }

  var view = View.overview
  /// Only entities and intents of this kind (`inspect`'s `kind`); nil: all.
  var kind: String?
  private var sortIndex: [View: Int] = [:]

  var sort: String { view.sorts[(sortIndex[view] ?? 0) % view.sorts.count] }

  /// What a key does; false when it means nothing here. `kinds` are the kinds `k`
  /// steps through (then back to all).
  mutating func handle(_ key: UInt8, kinds: [String]) -> Bool {
    let character = Character(Unicode.Scalar(key))
    if let chosen = View.allCases.first(where: { $0.key == character }) {
      view = chosen
      return true
    }
    switch character {
    case "\t":
      let all = View.allCases
      view = all[(all.firstIndex(of: view)! + 1) % all.count]
    case "s":
      sortIndex[view, default: 0] += 1
    case "k":
      guard !kinds.isEmpty else {
        kind = nil
        return true
      }
      if let kind, let index = kinds.firstIndex(where: { $0.hasSameBytes(as: kind) }) {
        self.kind = index + 1 < kinds.count ? kinds[index + 1] : nil
      } else {
        kind = kinds[0]
      }
    case "a":
      kind = nil
    default:
      return false
    }
    return true
  }

  /// The bottom line: what is chosen, then the keys (cut first on a narrow terminal).
  var legend: String {
    let views = View.allCases.map { "\($0.key) \($0.rawValue)" }.joined(separator: " ")
    return "view: \(view.rawValue) · kind: \(kind.map(EscapedText.line) ?? "all") · sort: \(sort) — keys: \(views) "
      + "tab next, k kind, a all kinds, s sort, q quit"
  }
}

/// A table of `top`, fitted to the width: each column but the last as wide as its
/// widest cell (at most `maxWidth`), the last taking what is left; a cell too long is
/// cut with "…". Every cell is escaped by the caller.
struct TopTable {
  var headers: [String]
  var rows: [[String]]
  var maxWidth = 28

  func lines(columns: Int) -> [String] {
    guard !headers.isEmpty else { return [] }
    var widths = headers.indices.map { index in
      min(
        maxWidth,
        max(TerminalCells.width(of: headers[index]), rows.map { TerminalCells.width(of: $0[index]) }.max() ?? 0))
    }
    let fixed = widths.dropLast().reduce(0) { $0 + $1 + 2 }
    widths[widths.count - 1] = max(4, columns - fixed)
    func line(_ cells: [String]) -> String {
      cells.enumerated().map { index, cell in
        let width = widths[index]
        let cut =
          TerminalCells.width(of: cell) > width ? TerminalCells.prefix(cell, cells: max(0, width - 1)) + "…" : cell
        return index == cells.count - 1 ? cut : TerminalCells.padded(cut, to: width + 2)
      }.joined()
    }
    return [line(headers)] + rows.map(line)
  }
}

/// The screens besides the overview, from an `inspect` result.
struct TopViews {
  let inspection: JSON
  let controls: TopControls
  /// The wall clock and the time zone of this terminal, for the times shown.
  let nowSeconds: Double

  /// The title line (after the header) and the table of the chosen view.
  func body(columns: Int) -> (title: String, table: TopTable) {
    switch controls.view {
    case .overview, .entities: return entities()
    case .lists: return lists()
    case .connections: return connections()
    case .holds: return holds()
    }
  }

  private func section(_ name: String) -> (list: [JSON], total: Int64, omitted: Int64) {
    let section = inspection[name]
    return (section?["list"]?.elements ?? [], section?["total"]?.integer ?? 0, section?["omitted"]?.integer ?? 0)
  }

  private func counted(_ what: String, _ total: Int64, _ omitted: Int64) -> String {
    omitted > 0 ? "\(what): \(total) (\(omitted) not shown)" : "\(what): \(total)"
  }

  private static func text(_ json: JSON?, _ name: String) -> String {
    EscapedText.line(json?[name]?.string ?? "")
  }

  /// `12s`, `3m04s`, `2h05m` ago.
  static func age(_ ms: Int64?) -> String {
    guard let ms else { return "-" }
    let seconds = ms / 1000
    if seconds < 60 { return "\(seconds)s" }
    if seconds < 3600 { return "\(seconds / 60)m\(two(seconds % 60))s" }
    return "\(seconds / 3600)h\(two(seconds / 60 % 60))m"
  }

  private static func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : String(value) }

  private static func errorText(_ item: JSON) -> String {
    guard let error = item["error"], !error.isNull else { return "" }
    return EscapedText.line("\(error["code"]?.integer ?? 0) \(error["message"]?.string ?? "")")
  }

  private func entities() -> (title: String, table: TopTable) {
    var (list, total, omitted) = section("entities")
    switch controls.sort {
    case "kind":
      list.sort {
        ($0["kind"]?.string ?? "", $0["id"]?.string ?? "") < ($1["kind"]?.string ?? "", $1["id"]?.string ?? "")
      }
    case "attempts": list.sort { ($0["attempts"]?.integer ?? 0) > ($1["attempts"]?.integer ?? 0) }
    default: list.sort { ($0["sinceMs"]?.integer ?? -1) > ($1["sinceMs"]?.integer ?? -1) }
    }
    let outbox = section("outbox")
    let rows = list.map { entity in
      [
        Self.text(entity, "kind"), Self.text(entity, "id"),
        (entity["states"]?.elements ?? []).compactMap(\.string).map(EscapedText.line).joined(separator: ","),
        Self.age(entity["sinceMs"]?.integer), String(entity["attempts"]?.integer ?? 0), Self.errorText(entity),
      ]
    }
    let title =
      counted("entities pending, reading, failed, requested or waiting", total, omitted) + " · "
      + counted("outbox", outbox.total, outbox.omitted)
    return (title, TopTable(headers: ["KIND", "ID", "STATES", "SINCE", "ATTEMPTS", "ERROR"], rows: rows))
  }

  private func lists() -> (title: String, table: TopTable) {
    var (list, total, omitted) = section("lists")
    switch controls.sort {
    case "items": list.sort { ($0["items"]?.integer ?? 0) > ($1["items"]?.integer ?? 0) }
    case "fetched": list.sort { ($0["fetchedMs"]?.integer ?? .max) < ($1["fetchedMs"]?.integer ?? .max) }
    default: break  // the server's order: by name, then params
    }
    let rows = list.map { entry in
      [
        Self.text(entry, "list"), EscapedText.line(entry["params"]?.text ?? "{}"),
        Self.text(entry, "phase") + (entry["stale"]?.bool == true ? ",stale" : "")
          + (entry["loading"]?.bool == true ? ",loading" : ""),
        String(entry["items"]?.integer ?? 0), String(entry["pages"]?.integer ?? 0),
        entry["hasMore"]?.bool == true ? "yes" : "no", Self.age(entry["fetchedMs"]?.integer), Self.errorText(entry),
      ]
    }
    return (
      counted("lists held", total, omitted),
      TopTable(headers: ["LIST", "PARAMS", "STATE", "ITEMS", "PAGES", "MORE", "FETCHED", "ERROR"], rows: rows)
    )
  }

  private func connections() -> (title: String, table: TopTable) {
    var (list, total, omitted) = section("connections")
    switch controls.sort {
    case "id": break  // the server's order
    case "subscriptions":
      list.sort { ($0["subscriptions"]?.elements.count ?? 0) > ($1["subscriptions"]?.elements.count ?? 0) }
    default: list.sort { ($0["unsentBytes"]?.integer ?? 0) > ($1["unsentBytes"]?.integer ?? 0) }
    }
    let rows = list.map { connection in
      let subscriptions = connection["subscriptions"]?.elements ?? []
      let topics = subscriptions.flatMap { ($0["topics"]?.elements ?? []).compactMap(\.string) }
      let topicCount = subscriptions.reduce(Int64(0)) { $0 + ($1["topicCount"]?.integer ?? 0) }
      return [
        String(connection["id"]?.integer ?? 0), Self.text(connection, "transport"),
        connection["client"]?.string.map(EscapedText.line) ?? "-", String(subscriptions.count),
        String(connection["queued"]?.integer ?? 0), String(connection["unsentBytes"]?.integer ?? 0),
        topics.isEmpty ? "" : EscapedText.line(topics.joined(separator: " ")) + (topicCount > topics.count ? " …" : ""),
      ]
    }
    return (
      counted("connections", total, omitted),
      TopTable(headers: ["ID", "TRANSPORT", "CLIENT", "SUBS", "QUEUED", "UNSENT", "TOPICS"], rows: rows)
    )
  }

  private func holds() -> (title: String, table: TopTable) {
    guard let holds = inspection["holds"], !holds.isNull else {
      return ("holds: none (this backend does not use HTTP)", TopTable(headers: [], rows: []))
    }
    // What matters first, the API's name last: a narrow terminal cuts the end.
    let waiting = holds["waiting"]
    let title =
      counted("waiting", waiting?["total"]?.integer ?? 0, waiting?["omitted"]?.integer ?? 0) + " · in flight "
      + "\(holds["inFlight"]?.integer ?? 0)/\(holds["maxConnections"]?.integer ?? 0) · "
      + (Self.rateLimitText(holds, nowSeconds: nowSeconds) ?? "not rate-limited") + " · api "
      + "\(Self.text(holds, "api")) (\(Self.text(holds, "environment")))"
    var list = waiting?["list"]?.elements ?? []
    if controls.sort == "priority" {
      let order = ["user", "visible", "display", "preload"]
      list.sort {
        (order.firstIndex(of: $0["priority"]?.string ?? "") ?? 9)
          < (order.firstIndex(of: $1["priority"]?.string ?? "") ?? 9)
      }
    }
    let rows = list.map { [Self.text($0, "priority"), Self.age($0["sinceMs"]?.integer), Self.text($0, "request")] }
    return (title, TopTable(headers: ["PRIORITY", "WAITING", "REQUEST"], rows: rows))
  }

  /// `rate-limited until 15:04:05 (x-ratelimit-reset)`, in this terminal's time zone;
  /// nil without a hold.
  static func rateLimitText(_ holds: JSON, nowSeconds: Double) -> String? {
    guard let limit = holds["rateLimit"], !limit.isNull else { return nil }
    let left = Double(limit["untilMs"]?.integer ?? 0) / 1000
    let until = Process.localTimeOfDay(secondsSince1970: Int((nowSeconds + left).rounded(.down)))
    let reason = limit["reason"]
    let source = reason?["header"]?.string ?? reason?["status"]?.integer.map { "status \($0)" } ?? "its answer"
    return "rate-limited until \(until) (\(EscapedText.line(source)))"
  }
}
