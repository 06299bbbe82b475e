import Posix
import Testing

@Suite struct EscapedTextTests {
  @Test func plainTextStaysAsItIs() {
    #expect(EscapedText.line("list artist:kaws did not advance") == "list artist:kaws did not advance")
    #expect(EscapedText.line("café — ☃ 𝄞") == "café — ☃ 𝄞")
  }

  /// A line break would start a log line of the sender's choosing.
  @Test func lineBreaksAndTabsAreShownAsEscapes() {
    #expect(EscapedText.line("a\nnetmodel: error: forged") == "a\\nnetmodel: error: forged")
    #expect(EscapedText.line("a\r\nb\tc") == "a\\r\\nb\\tc")
  }

  /// An escape in the output always means one: a backslash from outside is doubled.
  @Test func aBackslashIsDoubled() {
    #expect(EscapedText.line(#"a\nb"#) == #"a\\nb"#)
  }

  @Test func terminalControlsAreShownAsEscapes() {
    #expect(EscapedText.line("\u{1B}[31mred\u{1B}]0;title\u{07}") == "\\x1b[31mred\\x1b]0;title\\x07")
    #expect(EscapedText.line("\u{0}\u{7F}") == "\\x00\\x7f")
    // C1: U+009B is CSI to a terminal that reads 8-bit controls; U+0085 is NEL.
    #expect(EscapedText.line("a\u{9B}2Jb\u{85}c") == "a\\u{9B}2Jb\\u{85}c")
    #expect(EscapedText.line("x\u{2028}y\u{202E}z\u{2066}") == "x\\u{2028}y\\u{202E}z\\u{2066}")
  }

  /// Bytes that were not UTF-8 became U+FFFD when decoded: shown as an escape, not as
  /// a character that looks like any other.
  @Test func whatWasNotUTF8IsShownAsAnEscape() {
    #expect(EscapedText.line(String(decoding: [0x61, 0xFF, 0x62], as: UTF8.self)) == "a\\u{FFFD}b")
    #expect(EscapedText.line(String(decoding: [0xC0, 0xAF], as: UTF8.self)) == "\\u{FFFD}\\u{FFFD}")
  }
}
