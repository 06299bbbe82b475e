import CJansson

extension JSON {
  /// Compact text with no spaces; keys in insertion order.
  public static let compactFlags = Int(JSON_COMPACT) | Int(JSON_ENCODE_ANY)
  /// Compact with object keys sorted: equal values give equal text.
  public static let canonicalFlags = compactFlags | Int(JSON_SORT_KEYS)

  /// Appends this value's compact text to `buffer`. No intermediate string is made.
  public func encode(into buffer: inout [UInt8], flags: Int = JSON.compactFlags) {
    withUnsafeMutablePointer(to: &buffer) { pointer in
      _ = json_dump_callback(
        raw,
        { chunk, size, context in
          let target = context!.assumingMemoryBound(to: [UInt8].self)
          chunk!.withMemoryRebound(to: UInt8.self, capacity: size) {
            target.pointee.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
          }
          return 0
        }, pointer, flags)
    }
  }

  public func encoded(flags: Int = JSON.compactFlags) -> [UInt8] {
    var buffer: [UInt8] = []
    encode(into: &buffer, flags: flags)
    return buffer
  }

  public var text: String { String(decoding: encoded(), as: UTF8.self) }
}

extension JSON: CustomStringConvertible {
  public var description: String { text }
}

/// Appends `value` to `buffer` as a JSON string literal, escaped as RFC 8259 asks.
public func appendJSONString(_ value: String, to buffer: inout [UInt8]) {
  // Native strings, small ones included, lend their bytes without a copy.
  if value.utf8.withContiguousStorageIfAvailable({ appendJSONString(utf8: $0, to: &buffer) }) != nil { return }
  var copy = value
  copy.withUTF8 { appendJSONString(utf8: $0, to: &buffer) }
}

/// Appends `prefix` then `value` as one JSON string literal.
public func appendJSONString(_ value: String, after prefix: StaticString, to buffer: inout [UInt8]) {
  buffer.append(UInt8(ascii: "\""))
  prefix.withUTF8Buffer { appendEscaped(utf8: $0, to: &buffer) }
  if value.utf8.withContiguousStorageIfAvailable({ appendEscaped(utf8: $0, to: &buffer) }) == nil {
    var copy = value
    copy.withUTF8 { appendEscaped(utf8: $0, to: &buffer) }
  }
  buffer.append(UInt8(ascii: "\""))
}

private func appendJSONString(utf8: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
  buffer.append(UInt8(ascii: "\""))
  appendEscaped(utf8: utf8, to: &buffer)
  buffer.append(UInt8(ascii: "\""))
}

/// The text of a JSON string literal, without its quotes.
private func appendEscaped(utf8: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
  // Most strings need no escaping: copy runs of plain bytes in one go.
  var runStart = 0
  var index = 0
  while index < utf8.count {
    let byte = utf8[index]
    if byte < 0x20 || byte == 0x22 || byte == 0x5C {
      if runStart < index { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
      appendEscape(byte, to: &buffer)
      runStart = index + 1
    }
    index += 1
  }
  if runStart < utf8.count { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
}

/// Appends the bytes of a literal. Unlike a static array's, they need no retain and no
/// check that a lazily made global exists: the hot encoders append ~10 a reply.
@inlinable
public func appendLiteral(_ text: StaticString, to buffer: inout [UInt8]) {
  text.withUTF8Buffer { buffer.append(contentsOf: $0) }
}

private func appendEscape(_ byte: UInt8, to buffer: inout [UInt8]) {
  let hex: StaticString = "0123456789abcdef"
  switch byte {
  case UInt8(ascii: "\""): buffer.append(contentsOf: [92, 34])
  case UInt8(ascii: "\\"): buffer.append(contentsOf: [92, 92])
  case 0x0A: buffer.append(contentsOf: [92, UInt8(ascii: "n")])
  case 0x0D: buffer.append(contentsOf: [92, UInt8(ascii: "r")])
  case 0x09: buffer.append(contentsOf: [92, UInt8(ascii: "t")])
  default:
    hex.withUTF8Buffer { digits in
      buffer.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
  }
}

/// Appends the decimal text of `value`.
public func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
  if value >= 0 && value < 10 { return buffer.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)) }
  // Written backwards on the stack, then appended in one go.
  withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
    let start = writeDecimal(value, endingAt: digits.count, in: digits)
    buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
  }
}

/// Appends `prefix`, the decimal text of `value` and `suffix` with one append: an
/// append costs the same however short it is, and an envelope's id sits between two
/// literals.
public func appendDecimal(
  _ value: Int64, between prefix: StaticString, and suffix: StaticString, to buffer: inout [UInt8]
) {
  let prefixCount = prefix.utf8CodeUnitCount
  let digitsEnd = prefixCount + 20
  withUnsafeTemporaryAllocation(of: UInt8.self, capacity: digitsEnd + suffix.utf8CodeUnitCount) { text in
    let start = writeDecimal(value, endingAt: digitsEnd, in: text) - prefixCount
    prefix.withUTF8Buffer { _ = UnsafeMutableBufferPointer(rebasing: text[start...]).initialize(from: $0) }
    suffix.withUTF8Buffer { _ = UnsafeMutableBufferPointer(rebasing: text[digitsEnd...]).initialize(from: $0) }
    buffer.append(contentsOf: UnsafeBufferPointer(rebasing: text[start..<text.count]))
  }
}

/// Writes the decimal text of `value` backwards, ending before `end`; returns where it
/// starts.
private func writeDecimal(_ value: Int64, endingAt end: Int, in text: UnsafeMutableBufferPointer<UInt8>) -> Int {
  var magnitude = value.magnitude
  var start = end
  repeat {
    start -= 1
    text[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
    magnitude /= 10
  } while magnitude > 0
  if value < 0 {
    start -= 1
    text[start] = UInt8(ascii: "-")
  }
  return start
}

/// Appends `value` as a JSON string literal for a log line: as `appendJSONString`, and
/// what a terminal or a viewer would act on although JSON allows it raw (DEL, the C1
/// controls — U+009B is CSI to some terminals —, line and paragraph separators, the
/// bidirectional controls) is written as `\uXXXX` too, so the value parses back the same.
public func appendLogJSONString(_ value: String, to buffer: inout [UInt8]) {
  guard value.utf8.contains(where: { $0 >= 0x7F }) else { return appendJSONString(value, to: &buffer) }
  buffer.append(UInt8(ascii: "\""))
  var run = ""
  func flush() {
    guard !run.isEmpty else { return }
    run.withUTF8 { appendEscaped(utf8: $0, to: &buffer) }
    run = ""
  }
  for scalar in value.unicodeScalars {
    let code = scalar.value
    let invisible =
      code == 0x7F || (0x80...0x9F).contains(code) || code == 0x2028 || code == 0x2029
      || (0x200E...0x200F).contains(code) || (0x202A...0x202E).contains(code) || (0x2066...0x2069).contains(code)
    guard invisible else {
      run.unicodeScalars.append(scalar)
      continue
    }
    flush()
    let hex = String(code, radix: 16)
    buffer.append(contentsOf: Array("\\u\(String(repeating: "0", count: 4 - hex.count))\(hex)".utf8))
  }
  flush()
  buffer.append(UInt8(ascii: "\""))
}
