import CJansson

extension JSONDocument.Builder {
  /// jansson's error for the text the builder refused (message, line, column, byte), as
  /// `JSON.parse` of the whole text gives it, without jansson reading all of it: a
  /// refused configuration file used to cost a jansson tree up to the error (FuzzRESTConfig
  /// reads mostly refused ones).
  ///
  /// jansson's message depends only on where its parser is (which containers are open,
  /// what it expects next) and on the tokens from there on; its line, column and byte
  /// count only advance with the bytes it reads. So it reads a stand-in text instead:
  /// the innermost open container (and, for a text that nests too deep, as many `[` as
  /// there are around it), with a stand-in member before the failing one when a comma
  /// came before a closer (after `[`, `]` closes the array; after a comma it is an
  /// error), or the value just read when the failure came after it (its own text for
  /// a number or literal, whose end jansson finds by reading one byte more and losing it
  /// if it is a NUL; `""` or `[]` otherwise, which end at their last byte), then the
  /// text itself from `restart` on. Where the error is in the stand-in text is then
  /// moved to the same place in the whole text.
  func janssonError() -> JSONError {
    let text = UnsafeRawBufferPointer(start: scanner.base, count: scanner.end)
    let value = completed >= 0 ? nodes[completed] : nil
    let capacity = (tooDeep ? depth : 0) + 16 + (value.map { $0.end - $0.start } ?? 0)
    // The stand-in's start is short (on the stack); its end is the text itself.
    let found = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
      var count = 0
      func add(_ bytes: some Collection<UInt8>) {
        for byte in bytes {
          buffer[count] = byte
          count += 1
        }
      }
      // The containers around the innermost one count only when the text nests too
      // deep: from the failing member on, jansson reads no container (the builder would
      // have opened it), so it cannot reach that depth in the stand-in either. Which
      // kind they are changes nothing.
      if tooDeep { for _ in 0..<max(depth - 1, 0) { add(CollectionOfOne(UInt8(ascii: "["))) } }
      if open >= 0 {
        let isObject = nodes[open].kind == .object
        add(CollectionOfOne(isObject ? UInt8(ascii: "{") : UInt8(ascii: "[")))
        // After a comma a closer is an error, after the opener it is not; any other
        // token reads alike after either. (After a value, what came before it is no
        // matter.) A stand-in member costs jansson allocations: only when it counts.
        if completed < 0 && afterComma && closerFollows(restart, isObject: isObject) {
          add((isObject ? #""":null,"# : "null,").utf8)
        }
        if completed >= 0 && isObject { add(#""":"#.utf8) }
      }
      if let value {
        switch value.kind {
        case .object, .array: add("[]".utf8)
        case .string: add(#""""#.utf8)
        case .integer, .real, .true, .false, .null: add(text[value.start..<value.end])
        }
      }
      let start = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<count])
      return (count, Self.janssonError(reading: start, then: UnsafeRawBufferPointer(rebasing: text[restart...])))
    }
    let prefixCount = found.0
    guard let error = found.1 else { return wholeTextError(text) }
    // Before `restart` jansson has read the stand-in (one line, one column a byte); in
    // the whole text, what it reads of `text[..<restart]`: every byte but a NUL it lost,
    // columns counted in characters since the last line break.
    let (lines, lineStart) = Self.lineBreaks(text, upTo: restart)
    let column = restart - lineStart - Self.continuationBytes(text, from: lineStart, upTo: restart)
    let lostOnLine = lostNULs.lazy.filter { $0 >= lineStart && $0 < restart }.count
    let lost = lostNULs.lazy.filter { $0 < restart }.count
    return JSONError(
      message: error.message, line: error.line + lines,
      column: error.line > 1 ? error.column : error.column - prefixCount + column - lostOnLine,
      position: error.position - prefixCount + restart - lost)
  }

  /// Whether the first token from `index` on closes the innermost container (only
  /// jansson's whitespace before it).
  private func closerFollows(_ index: Int, isObject: Bool) -> Bool {
    var index = index
    while index < scanner.end {
      switch scanner.base[index] {
      case 0x20, 0x09, 0x0A, 0x0D: index += 1
      case UInt8(ascii: "}"): return isObject
      case UInt8(ascii: "]"): return !isObject
      default: return false
      }
    }
    return false
  }

  // Both counts go eight bytes at a time: the fuzzer's coverage instrumentation calls
  // a hook for every comparison, so a byte-by-byte loop over a 4 KiB text cost more
  // than jansson reading the stand-in.

  /// The line breaks in `text[..<end]`, and where the line after the last one begins.
  private static func lineBreaks(_ text: UnsafeRawBufferPointer, upTo end: Int) -> (count: Int, lastLineStart: Int) {
    var count = 0
    var lastLineStart = 0
    var index = 0
    while end - index >= 8 {
      let word = UInt64(littleEndian: text.loadUnaligned(fromByteOffset: index, as: UInt64.self))
      let breaks = zeroBytes(word ^ 0x0A0A_0A0A_0A0A_0A0A)
      if breaks != 0 {
        count += breaks.nonzeroBitCount
        lastLineStart = index + (63 - breaks.leadingZeroBitCount) / 8 + 1
      }
      index += 8
    }
    while index < end {
      if text[index] == 0x0A {
        count += 1
        lastLineStart = index + 1
      }
      index += 1
    }
    return (count, lastLineStart)
  }

  /// The bytes of `text[start..<end]` that continue a character of several bytes
  /// (0x80–0xBF): in checked text every other byte begins one, and jansson counts
  /// columns in characters.
  private static func continuationBytes(_ text: UnsafeRawBufferPointer, from start: Int, upTo end: Int) -> Int {
    var count = 0
    var index = start
    while end - index >= 8 {
      let word = UInt64(littleEndian: text.loadUnaligned(fromByteOffset: index, as: UInt64.self))
      count += zeroBytes((word & 0xC0C0_C0C0_C0C0_C0C0) ^ 0x8080_8080_8080_8080).nonzeroBitCount
      index += 8
    }
    while index < end {
      if text[index] & 0xC0 == 0x80 { count += 1 }
      index += 1
    }
    return count
  }

  /// jansson's error reading `first` and then `second` as one text (`JSON.parse`'s
  /// flags); nil when it reads them. Through `json_load_callback`, which takes the text
  /// in pieces: joining them would copy the text.
  private static func janssonError(reading first: UnsafeRawBufferPointer, then second: UnsafeRawBufferPointer)
    -> JSONError?
  {
    var pieces = Pieces(first: first, second: second)
    var error = json_error_t()
    let flags = Int(JSON_DECODE_ANY | JSON_ALLOW_NUL)
    if let value = json_load_callback(Pieces.read, &pieces, flags, &error) {
      json_decref(value)
      return nil
    }
    let message = withUnsafeBytes(of: &error.text) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
    return JSONError(message: message, line: Int(error.line), column: Int(error.column), position: Int(error.position))
  }

  private struct Pieces {
    let first: UnsafeRawBufferPointer
    let second: UnsafeRawBufferPointer
    /// How much of both jansson has been given.
    var given = 0

    /// jansson's `json_load_callback_t`: fills `buffer` with what comes next.
    static let read: json_load_callback_t = { buffer, length, data in
      let pieces = data!.assumingMemoryBound(to: Pieces.self)
      var written = 0
      while written < length {
        let given = pieces.pointee.given
        let firstCount = pieces.pointee.first.count
        let source = given < firstCount ? pieces.pointee.first : pieces.pointee.second
        let at = given < firstCount ? given : given - firstCount
        guard at < source.count else { break }
        let count = min(length - written, source.count - at)
        buffer!.advanced(by: written).copyMemory(from: source.baseAddress! + at, byteCount: count)
        written += count
        pieces.pointee.given += count
      }
      return written
    }
  }

  /// jansson's error for the whole text (were the stand-in text ever accepted).
  private func wholeTextError(_ text: UnsafeRawBufferPointer) -> JSONError {
    switch Result(catching: { () throws(JSONError) in try JSON.parse(text) }) {
    case .failure(let error): return error
    case .success: return JSONError(message: "jansson reads what JSONScanner refuses", line: 0, column: 0, position: 0)
    }
  }
}
