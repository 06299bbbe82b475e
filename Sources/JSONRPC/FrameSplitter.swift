import Posix

/// How a connection frames its messages, detected from its first non-whitespace byte.
public enum Framing: Sendable, Equatable {
  /// LSP base protocol: `Content-Length: N\r\n`, other headers, a blank line, N bytes.
  case contentLength
  /// One JSON text per line.
  case newlineDelimited
}

/// What the splitter found next in a connection's byte stream.
public enum Frame: Equatable {
  /// One message's bytes. The slice is valid until the next `append`.
  case message(ArraySlice<UInt8>)
  /// A message larger than the limit; its bytes are skipped as they arrive.
  case oversized(byteCount: Int?)
  /// Content-Length headers that could not be read; they were skipped.
  case badHeader(String)
}

/// Splits a byte stream into messages. Pure: no I/O, no JSON, so it can be fed one
/// byte at a time or in random chunks and must find the same frames.
public struct FrameSplitter {
  public private(set) var framing: Framing?
  public let maxMessageBytes: Int

  private var buffer: [UInt8] = []
  /// Where the unconsumed bytes begin.
  private var start = 0
  /// How far a newline search has already looked, so long lines are scanned once.
  private var scanned = 0
  private var skip = Skip.none

  private enum Skip {
    case none
    case bytes(Int)
    case restOfLine
    /// Headers too long to keep: drop bytes up to the blank line, then the body.
    case restOfHeaders(bodyLength: Int?)
  }

  /// Headers longer than this without a blank line are not headers.
  static let maxHeaderBytes = 8192

  public init(maxMessageBytes: Int = 16 << 20, framing: Framing? = nil) {
    self.maxMessageBytes = maxMessageBytes
    self.framing = framing
  }

  /// Bytes held but not yet returned as frames.
  public var bufferedByteCount: Int { buffer.count - start }

  public mutating func append(_ bytes: UnsafeRawBufferPointer) {
    compact()
    buffer.append(contentsOf: bytes)
  }

  public mutating func append(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { append($0) }
  }

  /// The next complete frame, or nil when more bytes are needed.
  public mutating func next() -> Frame? {
    while true {
      if case .bytes(let remaining) = skip {
        let available = buffer.count - start
        if available < remaining {
          skip = .bytes(remaining - available)
          start = buffer.count
          return nil
        }
        start += remaining
        skip = .none
      }
      if case .restOfHeaders(let bodyLength) = skip {
        guard let end = findHeaderEnd() else {
          // Keep the last two bytes: the blank line may straddle two reads.
          start = max(start, buffer.count - 2)
          return nil
        }
        start = end.body
        skip = .bytes(bodyLength ?? 0)
        continue
      }
      skipWhitespace()
      guard start < buffer.count else { return nil }
      if framing == nil {
        let first = buffer[start]
        framing = (first == UInt8(ascii: "C") || first == UInt8(ascii: "c")) ? .contentLength : .newlineDelimited
      }
      switch framing! {
      case .newlineDelimited: return nextLine()
      case .contentLength:
        guard let frame = nextContentLengthFrame() else { return nil }
        if let frame { return frame }
      // A frame that was skipped whole: look again.
      }
    }
  }

  private mutating func skipWhitespace() {
    if case .restOfLine = skip { return }
    if case .restOfHeaders = skip { return }
    while start < buffer.count {
      switch buffer[start] {
      case 0x20, 0x09, 0x0A, 0x0D: start += 1
      default: return
      }
    }
    scanned = start
  }

  private mutating func nextLine() -> Frame? {
    if scanned < start { scanned = start }
    let newline = firstNewline(from: scanned)
    if case .restOfLine = skip {
      guard let newline else {
        start = buffer.count
        scanned = start
        return nil
      }
      start = newline + 1
      scanned = start
      skip = .none
      return next()
    }
    guard let newline else {
      scanned = buffer.count
      // A last CR may be the first half of CRLF, which is not part of the message:
      // counting it would make a line of exactly the limit oversized or not depending
      // on where a read ended.
      let open = buffer.count - start - (buffer.last == 0x0D ? 1 : 0)
      if open > maxMessageBytes {
        let seen = buffer.count - start
        start = buffer.count
        scanned = start
        skip = .restOfLine
        return .oversized(byteCount: seen)
      }
      return nil
    }
    var end = newline
    if end > start && buffer[end - 1] == 0x0D { end -= 1 }
    let lineStart = start
    start = newline + 1
    scanned = start
    if end - lineStart > maxMessageBytes { return .oversized(byteCount: end - lineStart) }
    return .message(buffer[lineStart..<end])
  }

  /// nil: need more bytes; .some(nil): a frame was skipped, look again.
  /// memchr, not `firstIndex(of:)` on a slice: every line of a pipelined stream is
  /// searched byte by byte, and the generic search cost more than the rest of the split.
  private func firstNewline(from offset: Int) -> Int? {
    buffer.withUnsafeBytes { bytes in
      guard offset < bytes.count,
        let found = Memory.firstOffset(of: 0x0A, in: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
      else { return nil }
      return offset + found
    }
  }

  private mutating func nextContentLengthFrame() -> Frame?? {
    guard let headerEnd = findHeaderEnd() else {
      if buffer.count - start > FrameSplitter.maxHeaderBytes {
        // Whatever way the bytes arrive, the same frames must come out: read the
        // length from the complete lines seen so far and skip headers and body.
        let lastNewline = buffer[start...].lastIndex(of: 0x0A) ?? start
        let length = FrameSplitter.contentLength(in: buffer[start..<lastNewline])
        start = buffer.count
        skip = .restOfHeaders(bodyLength: length)
        return .some(FrameSplitter.headersTooLong)
      }
      return nil
    }
    let headers = buffer[start..<headerEnd.headers]
    let bodyStart = headerEnd.body
    let length = FrameSplitter.contentLength(in: headers)
    if headers.count > FrameSplitter.maxHeaderBytes {
      start = bodyStart
      skip = .bytes(length ?? 0)
      return .some(FrameSplitter.headersTooLong)
    }
    guard let length else {
      start = bodyStart
      return .some(.badHeader("missing or invalid Content-Length header"))
    }
    if length > maxMessageBytes {
      start = bodyStart
      skip = .bytes(length)
      return .some(.oversized(byteCount: length))
    }
    guard buffer.count - bodyStart >= length else { return nil }
    start = bodyStart + length
    return .some(.message(buffer[bodyStart..<bodyStart + length]))
  }

  /// Made only when headers are too long: interpolated for every frame, it was most of
  /// a Content-Length frame's split.
  private static var headersTooLong: Frame {
    .badHeader("headers longer than \(FrameSplitter.maxHeaderBytes) bytes")
  }

  /// Finds the blank line after the headers; accepts CRLF CRLF and, leniently, LF LF.
  /// Goes from newline to newline with memchr, as `nextLine` does.
  private func findHeaderEnd() -> (headers: Int, body: Int)? {
    buffer.withUnsafeBytes { bytes in
      var from = start
      while from < bytes.count,
        let found = Memory.firstOffset(of: 0x0A, in: UnsafeRawBufferPointer(rebasing: bytes[from...]))
      {
        let newline = from + found
        if newline + 1 < bytes.count && bytes[newline + 1] == 0x0A { return (newline, newline + 2) }
        if newline + 2 < bytes.count && bytes[newline + 1] == 0x0D && bytes[newline + 2] == 0x0A {
          return (newline, newline + 3)
        }
        from = newline + 1
      }
      return nil
    }
  }

  static func contentLength(in headers: ArraySlice<UInt8>) -> Int? {
    headers.withUnsafeBytes { contentLength(inHeaderBytes: $0) }
  }

  /// The value of the last `Content-Length` line; nil when there is none or one is not
  /// a number. Reads the bytes where they are: splitting the lines into an array and
  /// lowercasing each name as a `String` cost more than the rest of the frame.
  private static func contentLength(inHeaderBytes headers: UnsafeRawBufferPointer) -> Int? {
    var result: Int?
    var lineStart = 0
    while lineStart < headers.count {
      let rest = UnsafeRawBufferPointer(rebasing: headers[lineStart...])
      let lineEnd = Memory.firstOffset(of: 0x0A, in: rest).map { lineStart + $0 } ?? headers.count
      let line = UnsafeRawBufferPointer(rebasing: headers[lineStart..<lineEnd])
      lineStart = lineEnd + 1
      guard let colon = Memory.firstOffset(of: UInt8(ascii: ":"), in: line),
        isContentLengthName(UnsafeRawBufferPointer(rebasing: line[..<colon]))
      else { continue }
      var value = 0
      var digits = 0
      var ended = false
      for byte in line[(colon + 1)...] {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
          if ended { return nil }
          value = value &* 10 &+ Int(byte - UInt8(ascii: "0"))
          digits += 1
          if digits > 15 { return nil }
        case 0x20, 0x09, 0x0D: ended = digits > 0
        default: return nil
        }
      }
      if digits == 0 { return nil }
      result = value
    }
    return result
  }

  /// Whether a header's name is `Content-Length` in any case. ASCII case folding is
  /// enough: no other character lowercases into this name's letters.
  private static func isContentLengthName(_ name: UnsafeRawBufferPointer) -> Bool {
    let expected: StaticString = "content-length"
    guard name.count == expected.utf8CodeUnitCount else { return false }
    // As clients write it, in one comparison; folded byte by byte only otherwise.
    let usual: StaticString = "Content-Length"
    if Memory.equal(name.baseAddress!, usual.utf8Start, count: name.count) { return true }
    for index in 0..<name.count {
      var byte = name[index]
      if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte |= 0x20 }
      if byte != expected.utf8Start[index] { return false }
    }
    return true
  }

  /// At end of input: a last newline-delimited message without its newline is still
  /// a message (`printf '{...}' | netmodel serve`). Nothing for Content-Length framing,
  /// where a short body is a truncated message.
  public mutating func finishInput() -> Frame? {
    guard framing == .newlineDelimited, case .none = skip else { return nil }
    skipWhitespace()
    guard start < buffer.count else { return nil }
    var end = buffer.count
    if buffer[end - 1] == 0x0D { end -= 1 }
    let lineStart = start
    start = buffer.count
    scanned = start
    if end - lineStart > maxMessageBytes { return .oversized(byteCount: end - lineStart) }
    return .message(buffer[lineStart..<end])
  }

  /// Drops consumed bytes once they are most of the buffer, so memory stays bounded
  /// by one message and copying stays amortised O(1) per byte.
  private mutating func compact() {
    if start == buffer.count {
      buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
      start = 0
      scanned = 0
    } else if start > 4096 && start * 2 > buffer.count {
      buffer.removeSubrange(0..<start)
      scanned -= start
      start = 0
    }
  }
}
