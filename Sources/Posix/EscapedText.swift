/// Text from outside (an API's answer, a peer's request, a file) made safe to show in
/// one line of a log or on a terminal: a line break in it could forge a log line of its
/// own, and an ESC, OSC or C1 control could drive the terminal or the journal's viewer.
///
/// What stays is every printable character as it is; what is made visible: `\n`, `\r`,
/// `\t`, `\\` (so an escape in the output always means one), other C0 controls and DEL
/// as `\xNN`, C1 controls, line and paragraph separators and bidirectional overrides as
/// `\u{NNNN}`, and each byte of invalid UTF-8 as `\xNN`.
public enum EscapedText {
  /// `text`, escaped; the same string when nothing in it needs it (the usual case).
  public static func line(_ text: String) -> String {
    var text = text
    return text.withUTF8 { bytes in
      guard bytes.contains(where: needsLook) else { return nil }
      return String(decoding: escaped(bytes), as: UTF8.self)
    } ?? text
  }

  /// Bytes that may not be UTF-8 (a header value, a file's contents), escaped.
  public static func line(bytes: some Collection<UInt8>) -> String {
    String(decoding: Array(bytes).withUnsafeBufferPointer(escaped), as: UTF8.self)
  }

  private static func needsLook(_ byte: UInt8) -> Bool {
    byte < 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\\")
  }

  private static func escaped(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count + 16)
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      if byte < 0x80 {
        appendASCII(byte, to: &out)
        index += 1
        continue
      }
      guard let (scalar, length) = decode(bytes, at: index) else {
        appendHex(byte, to: &out)
        index += 1
        continue
      }
      let end = index + length
      if isHidden(scalar) {
        out.append(contentsOf: "\\u{".utf8)
        out.append(contentsOf: String(scalar, radix: 16, uppercase: true).utf8)
        out.append(UInt8(ascii: "}"))
      } else {
        out.append(contentsOf: bytes[index..<end])
      }
      index = end
    }
    return out
  }

  private static func appendASCII(_ byte: UInt8, to out: inout [UInt8]) {
    switch byte {
    case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
    case UInt8(ascii: "\r"): out.append(contentsOf: "\\r".utf8)
    case UInt8(ascii: "\t"): out.append(contentsOf: "\\t".utf8)
    case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
    case 0..<0x20, 0x7F: appendHex(byte, to: &out)
    default: out.append(byte)
    }
  }

  private static func appendHex(_ byte: UInt8, to out: inout [UInt8]) {
    let digits = Array("0123456789abcdef".utf8)
    out.append(contentsOf: "\\x".utf8)
    out.append(digits[Int(byte >> 4)])
    out.append(digits[Int(byte & 0xF)])
  }

  /// C1 controls (a terminal takes U+009B as CSI), line and paragraph separators (a line
  /// break to some viewers) and the bidirectional controls (they reorder what follows).
  private static func isHidden(_ scalar: UInt32) -> Bool {
    (0x80...0x9F).contains(scalar) || scalar == 0x2028 || scalar == 0x2029 || (0x200E...0x200F).contains(scalar)
      || (0x202A...0x202E).contains(scalar) || (0x2066...0x2069).contains(scalar)
  }

  /// The scalar of the well-formed UTF-8 sequence at `index` (RFC 3629 §4: no overlong
  /// forms, no surrogates, nothing above U+10FFFF) and its length; nil when it is not one.
  private static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (UInt32, Int)? {
    let lead = bytes[index]
    let length: Int
    let smallest: UInt32
    var scalar: UInt32
    switch lead {
    case 0xC2...0xDF: (length, smallest, scalar) = (2, 0x80, UInt32(lead & 0x1F))
    case 0xE0...0xEF: (length, smallest, scalar) = (3, 0x800, UInt32(lead & 0x0F))
    case 0xF0...0xF4: (length, smallest, scalar) = (4, 0x1_0000, UInt32(lead & 0x07))
    default: return nil
    }
    guard index + length <= bytes.count else { return nil }
    for offset in 1..<length {
      let next = bytes[index + offset]
      guard next & 0xC0 == 0x80 else { return nil }
      scalar = scalar << 6 | UInt32(next & 0x3F)
    }
    guard scalar >= smallest, scalar <= 0x10_FFFF, !(0xD800...0xDFFF).contains(scalar) else { return nil }
    return (scalar, length)
  }
}
