/// Text from outside (an API's answer, a peer's request, a file) made safe to show in
/// one line of a log or on a terminal: a line break in it could forge a log line of its
/// own, and an ESC, OSC or C1 control could drive the terminal or the journal's viewer.
///
/// What stays is every printable character as it is; what is made visible: `\n`, `\r`,
/// `\t`, `\\` (so an escape in the output always means one), other C0 controls and DEL
/// as `\xNN`; C1 controls, line and paragraph separators, bidirectional controls and
/// U+FFFD as `\u{NNNN}`. A `String` is always UTF-8: bytes that were not became U+FFFD
/// when they were decoded, so input that was not UTF-8 shows as `\u{FFFD}`.
public enum EscapedText {
  /// `text`, escaped; the same string when nothing in it needs it (the usual case).
  public static func line(_ text: String) -> String {
    guard text.utf8.contains(where: { $0 < 0x20 || $0 >= 0x7F || $0 == UInt8(ascii: "\\") }) else { return text }
    var out = ""
    out.reserveCapacity(text.utf8.count + 16)
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case "\\": out += "\\\\"
      case "\u{0}"..<" ", "\u{7F}": out += "\\x" + hex(scalar.value, width: 2, uppercase: false)
      case _ where isHidden(scalar.value): out += "\\u{" + hex(scalar.value, width: 1, uppercase: true) + "}"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// C1 controls (a terminal takes U+009B as CSI), line and paragraph separators (a line
  /// break to some viewers), the bidirectional controls (they reorder what follows) and
  /// the replacement character (what bytes that were not UTF-8 became).
  private static func isHidden(_ scalar: UInt32) -> Bool {
    (0x80...0x9F).contains(scalar) || scalar == 0x2028 || scalar == 0x2029 || (0x200E...0x200F).contains(scalar)
      || (0x202A...0x202E).contains(scalar) || (0x2066...0x2069).contains(scalar) || scalar == 0xFFFD
  }

  private static func hex(_ value: UInt32, width: Int, uppercase: Bool) -> String {
    let text = String(value, radix: 16, uppercase: uppercase)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }
}
