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
    let tooLong = Frame.badHeader("headers longer than \(FrameSplitter.maxHeaderBytes) bytes")
    guard let headerEnd = findHeaderEnd() else {
      if buffer.count - start > FrameSplitter.maxHeaderBytes {
        // Whatever way the bytes arrive, the same frames must come out: read the
        // length from the complete lines seen so far and skip headers and body.
        let lastNewline = buffer[start...].lastIndex(of: 0x0A) ?? start
        let length = FrameSplitter.contentLength(in: buffer[start..<lastNewline])
        start = buffer.count
        skip = .restOfHeaders(bodyLength: length)
        return .some(tooLong)
      }
      return nil
    }
    let headers = buffer[start..<headerEnd.headers]
    let bodyStart = headerEnd.body
    let length = FrameSplitter.contentLength(in: headers)
    if headers.count > FrameSplitter.maxHeaderBytes {
      start = bodyStart
      skip = .bytes(length ?? 0)
      return .some(tooLong)
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

  /// Finds the blank line after the headers; accepts CRLF CRLF and, leniently, LF LF.
  private func findHeaderEnd() -> (headers: Int, body: Int)? {
    var i = start
    while i < buffer.count {
      if buffer[i] == 0x0A {
        if i + 1 < buffer.count && buffer[i + 1] == 0x0A { return (i, i + 2) }
        if i + 2 < buffer.count && buffer[i + 1] == 0x0D && buffer[i + 2] == 0x0A { return (i, i + 3) }
      }
      i += 1
    }
    return nil
  }

  static func contentLength(in headers: ArraySlice<UInt8>) -> Int? {
    var result: Int?
    for line in headers.split(separator: 0x0A) {
      guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
      let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
      guard name.lowercased() == "content-length" else { continue }
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
