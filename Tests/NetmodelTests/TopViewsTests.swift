import JSON
import Posix
import Testing

@testable import netmodel

/// `top`'s views and `call`'s waiting line show strings of the server's (ids, errors,
/// client names, URLs): each is escaped, and every line fits the width.
@Suite struct TopViewsTests {
  static let forged = "x\nnetmodel: error: forged\u{1B}]0;owned\u{07}\u{9B}2J"

  static func section(_ items: JSON...) -> JSON {
    let list = JSON.array()
    for item in items { list.append(item) }
    return JSON.object().set("total", .integer(items.count + 3)).set("omitted", .integer(3)).set("list", list)
  }

  static var inspection: JSON {
    let error = JSON.object().set("code", .integer(-32001)).set("message", .string(forged))
    let entity = JSON.object().set("kind", .string("artist")).set("id", .string(forged))
      .set("states", JSON.array().append(.string("failed"))).set("attempts", .integer(2))
      .set("sinceMs", .integer(4200)).set("error", error)
    let connection = JSON.object().set("id", .integer(1)).set("transport", .string("socket"))
      .set("client", .string(forged)).set("queued", .integer(0)).set("unsentBytes", .integer(0))
      .set(
        "subscriptions",
        JSON.array().append(
          JSON.object().set("subscription", .string("s1")).set("topicCount", .integer(1))
            .set("topics", JSON.array().append(.string(forged)))))
    let list = JSON.object().set("list", .string(forged)).set("params", JSON.object().set("q", .string(forged)))
      .set("phase", .string("failure")).set("items", .integer(0)).set("error", error)
    let waiting = JSON.object().set("request", .string("GET " + forged)).set("priority", .string("user"))
      .set("sinceMs", .integer(100))
    let reason = JSON.object().set("status", .integer(429)).set("header", .string(forged))
    let holds = JSON.object().set("api", .string(forged)).set("environment", .string(forged))
      .set("rateLimit", JSON.object().set("untilMs", .integer(60_000)).set("reason", reason))
      .set("inFlight", .integer(0)).set("maxConnections", .integer(8)).set("waiting", section(waiting))
    return JSON.object().set("uptimeMs", .integer(5000)).set("entities", section(entity))
      .set("outbox", section()).set("connections", section(connection)).set("lists", section(list))
      .set("holds", holds)
  }

  @Test(arguments: TopControls.View.allCases)
  func everyViewEscapesAndFits(view: TopControls.View) {
    var controls = TopControls()
    controls.view = view
    let stats = JSON.object().set("instance", .string("i")).set("uptimeMs", .integer(1000))
    for columns in [40, 120] {
      let screen = TopScreen(
        stats: stats, rates: TopRates(), size: (rows: 30, columns: columns), colour: true,
        inspection: Self.inspection, controls: controls, uptimeMs: 65_000, nowSeconds: 1_796_223_844, legend: true)
      let text = screen.text
      #expect(!text.unicodeScalars.contains("\u{07}"))
      #expect(!text.unicodeScalars.contains("\u{9B}"))
      #expect(!text.contains("\u{1B}]"))
      #expect(!text.split(separator: "\n").contains { $0.hasPrefix("netmodel: error: forged") })
      #expect(text.contains("up 1m05s"), "the uptime given, not the push's")
      for line in text.split(separator: "\n") {
        #expect(Self.visible(line) <= columns, "\(view) at \(columns): \(line)")
      }
      if view != .overview && columns == 120 {
        #expect(text.contains(#"x\nnetmodel: error: forged"#), "\(view): \(text)")
        #expect(text.contains("3 not shown"), "\(view): the omitted count")
      }
    }
  }

  /// A wide client name (CJK takes two cells a character) keeps the next column in line,
  /// and one too wide is cut to the cells left, not to a count of characters.
  @Test func wideCharactersKeepTheColumnsInLine() {
    let table = TopTable(headers: ["CLIENT", "N"], rows: [["編集者", "x"], ["ab", "y"]])
    #expect(table.lines(columns: 20) == ["CLIENT  N", "編集者  x", "ab      y"])
    let cut = TopTable(headers: ["C", "N"], rows: [["編集者です編集者です", "z"]], maxWidth: 7)
    #expect(cut.lines(columns: 20) == ["C        N", "編集者…  z"])
  }

  /// Cells a line takes: its characters without the escape sequences.
  static func visible(_ line: Substring) -> Int {
    var count = 0
    var inEscape = false
    for character in line {
      if character == "\u{1B}" { inEscape = true }
      if !inEscape { count += TerminalCells.width(of: character) }
      if inEscape && character.isLetter { inEscape = false }
    }
    return count
  }

  @Test func keysSwitchViewsKindsAndSorts() {
    var controls = TopControls()
    func press(_ key: Character, _ kinds: [String] = ["artist", "gene"]) -> Bool {
      controls.handle(key.asciiValue!, kinds: kinds)
    }
    #expect(press("e"))
    #expect(controls.view == .entities && controls.sort == "oldest")
    #expect(press("s"))
    #expect(controls.sort == "kind")
    #expect(press("k") && controls.kind == "artist")
    #expect(press("k") && controls.kind == "gene")
    #expect(press("k") && controls.kind == nil)
    #expect(press("\t") && controls.view == .lists)
    #expect(!press("z"))
  }

  @Test func theWaitingLineNamesTheHoldsHeaderAndTheEntitysState() {
    let holds = Self.inspection["holds"]!
    let held = JSON.object().set("holds", holds)
    let (key, text) = CallWaiting.reason(held, entity: ("artist", "banksy"), nowSeconds: 1_796_223_844)
    #expect(text.hasPrefix(Self.forged + " rate-limited until "))
    #expect(text.hasSuffix("(" + Self.forged + ")"))
    // The same hold a second later is the same reason: no second line.
    #expect(key == CallWaiting.reason(held, entity: ("artist", "banksy"), nowSeconds: 1_796_223_845).key)
    // A reset on a whole second, a few milliseconds lost or gained on the way: that second.
    for (untilMs, now) in [(4999, 1_796_223_840.0), (4990, 1_796_223_840.02)] {
      let limit = JSON.object().set("untilMs", .integer(Int64(untilMs)))
      let line = CallWaiting.reason(
        JSON.object().set("holds", JSON.object().set("rateLimit", limit)), entity: nil, nowSeconds: now
      ).text
      #expect(line.contains("until " + Process.localTimeOfDay(secondsSince1970: 1_796_223_845) + " "), "\(line)")
    }
    let entity = Self.inspection["entities"]!
    let reading = JSON.object().set("entities", entity)
    let line = CallWaiting.reason(reading, entity: ("artist", "banksy"), nowSeconds: 0).text
    #expect(line == "artist/banksy: failed, for 4 s: " + Self.forged)
  }
}
