import Posix
import Testing

@testable import netmodel

/// `--log-format json`: one object a line, every value from outside one JSON string
/// (docs/operations.md "Logs").
@Suite struct LogJSONTests {
  @Test func anEventIsOneObjectWithItsFields() {
    let event = Log.Event(
      level: .warn, name: "rollback", message: "rolled back",
      fields: [.init("kind", "artist"), .init("status", 404), .init("inherited", false)])
    let line = String(decoding: LogFormat.jsonLine(event, time: "2026-12-02T03:04:05.678Z"), as: UTF8.self)
    #expect(
      line
        == #"{"time":"2026-12-02T03:04:05.678Z","level":"warn","event":"rollback","message":"rolled back","#
        + #""kind":"artist","status":404,"inherited":false}"#)
  }

  @Test func controlsAndInvisibleCharactersAreEscaped() {
    let forged = "x\n{\"level\":\"error\"}\u{1B}[2J\u{9B}31m\u{2028}\u{202E}\u{7F}é"
    let event = Log.Event(level: .info, name: "connection.client", message: "m", fields: [.init("client", forged)])
    let line = String(decoding: LogFormat.jsonLine(event, time: "t"), as: UTF8.self)
    #expect(
      line.hasSuffix(#""client":"x\n{\"level\":\"error\"}\u001b[2J\u009b31m\u2028\u202e\u007fé"}"#), "\(line)")
    #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
  }
}
