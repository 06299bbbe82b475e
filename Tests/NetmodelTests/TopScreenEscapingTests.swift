import JSON
import Testing

@testable import netmodel

@Suite struct TopScreenEscapingTests {
  /// Strings on the screen are the server's: a line break or an ESC in one (a hostile
  /// server on the socket, a name from a configuration) must not drive the terminal or
  /// add rows of its own.
  @Test func theServersStringsAreShownEscaped() {
    let forged = "x\nnetmodel: error: forged\u{1B}]0;owned\u{07}\u{9B}2J"
    let endpoint = JSON.object().set("inFlight", .integer(1)).set("finished", .integer(2))
    let stats = JSON.object()
      .set("instance", .string(forged))
      .set("uptimeMs", .integer(1000))
      .set("backend", JSON.object().set("http", JSON.object().set("endpoints", JSON.object().set(forged, endpoint))))
      .set(
        "connections",
        JSON.object().set(
          "list", JSON.array().append(JSON.object().set("id", .integer(1)).set("transport", .string(forged)))))
    for colour in [false, true] {
      let text = TopScreen(stats: stats, rates: TopRates(), size: (rows: 40, columns: 300), colour: colour).text
      #expect(!text.unicodeScalars.contains("\u{07}"))
      #expect(!text.unicodeScalars.contains("\u{9B}"))
      #expect(!text.contains("\u{1B}]"))
      #expect(!text.split(separator: "\n").contains { $0.hasPrefix("netmodel: error: forged") })
      let shown = #"x\nnetmodel: error: forged\x1b]0;owned\x07\u{9B}2J"#
      #expect(text.ranges(of: shown).count == 3, "instance, endpoint and transport: \(text)")
    }
  }
}
