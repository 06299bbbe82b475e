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

  /// The overview's backend line says where libcurl runs: a burst moved it to its own
  /// thread, and a figure that keeps growing says bursts are common.
  @Test func theBackendLineSaysWhereLibcurlRuns() {
    func line(_ http: JSON?) -> String {
      let backend = JSON.object().set("calls", .integer(3))
      if let http { backend.set("http", http) }
      let text = TopScreen(
        stats: JSON.object().set("backend", backend), rates: TopRates(), size: (rows: 40, columns: 300), colour: false
      ).text
      // Each line ends by clearing the rest of the terminal's row.
      let row = text.split(separator: "\n").first { $0.hasPrefix("backend: calls 3") } ?? ""
      return String(row.hasSuffix("\u{1B}[K") ? row.dropLast(3) : row)
    }
    func http(_ thread: String, _ moves: Int64) -> JSON {
      JSON.object().set("inFlight", .integer(9)).set("libcurlThread", .string(thread)).set(
        "libcurlMoves", .integer(moves))
    }
    #expect(line(http("own", 1)).hasSuffix("http in flight 9  libcurl on its own thread (moved once)"))
    #expect(line(http("own", 3)).hasSuffix("libcurl on its own thread (moved 3 times)"))
    #expect(line(http("loop", 0)).hasSuffix("http in flight 9  libcurl on the loop"))
    #expect(line(http("loop", 2)).hasSuffix("libcurl on the loop (moved to its thread 2 times)"))
    #expect(line(nil).hasSuffix("http in flight 0"), "the local backend: nothing about libcurl")
    #expect(line(http("x\u{1B}[2J", 0)).hasSuffix(#"libcurl on x\x1b[2J"#), "a hostile server's word, escaped")
  }
}
