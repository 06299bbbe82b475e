import Testing

@testable import Posix

/// The text form of a log event (docs/operations.md "Logs"): fields after the sentence, values from
/// outside quoted and escaped so that none can end the line or pass for another field.
@Suite struct LogTextTests {
  func line(_ message: String, _ fields: [Log.Field]) -> String {
    Log.text(Log.Event(level: .warn, name: "test", message: message, fields: fields))
  }

  @Test func plainValuesStandAndOthersAreQuoted() {
    #expect(
      line("rolled back", [.init("kind", "artist"), .init("status", 404), .init("inherited", true)])
        == "netmodel: warn: rolled back; kind=artist status=404 inherited=true")
    #expect(
      line("x", [.init("id", "a b"), .init("empty", ""), .init("eq", "k=v"), .init("quote", #"say "hi""#)])
        == #"netmodel: warn: x; id="a b" empty="" eq="k=v" quote="say \"hi\"""#)
  }

  @Test func aValueCannotEndTheLineNorForgeAField() {
    let forged = line("x", [.init("error", "oops\nnetmodel: error: forged\u{1B}[2J\" status=200")])
    #expect(!forged.contains("\n") && !forged.contains("\u{1B}"))
    #expect(forged == #"netmodel: warn: x; error="oops\nnetmodel: error: forged\x1b[2J\" status=200""#)
    let backslash = line("x", [.init("path", #"C:\dir"#)])
    #expect(backslash == #"netmodel: warn: x; path="C:\\dir""#)
  }

  @Test func longTextIsCutAtAFixedLength() {
    guard case .text(let text) = Log.Field("id", String(repeating: "é", count: 5000)).value else {
      Issue.record("not text")
      return
    }
    #expect(text.unicodeScalars.count == Log.Field.maxScalars + 1 && text.hasSuffix("…"))
  }

  @Test func timestampsAreRFC3339InUTC() {
    #expect(Log.timestamp(0) == "1970-01-01T00:00:00.000Z")
    #expect(Log.timestamp(951_782_400.5) == "2000-02-29T00:00:00.500Z")
    #expect(Log.timestamp(1_796_180_645.678) == "2026-12-02T03:04:05.678Z")
    #expect(Log.timestamp(-1) == "1969-12-31T23:59:59.000Z")
  }
}
