extension JSONDocument.Builder {
  /// jansson's error for the text the builder refused (message, line, column, byte), as
  /// `JSON.parse` of the whole text gives it, without jansson reading all of it: a
  /// refused configuration file used to cost a jansson tree up to the error (FuzzRESTConfig
  /// reads mostly refused ones).
  ///
  /// jansson's message depends only on where its parser is (which containers are open,
  /// what it expects next) and on the tokens from there on; its line, column and byte
  /// count only advance with the bytes it reads. So it reads a stand-in text instead:
  /// the open containers (`[`, or `{"":`), with a stand-in member before the failing one
  /// when a comma came before it (after `[`, `]` closes the array; after a comma it is
  /// an error), or the value just read when the failure came after it (its own text for
  /// a number or literal, whose end jansson finds by reading one byte more and losing it
  /// if it is a NUL; `""` or `[]` otherwise, which end at their last byte), then the
  /// text itself from `restart` on. Where the error is in the stand-in text is then
  /// moved to the same place in the whole text.
  func janssonError() -> JSONError {
    let text = UnsafeRawBufferPointer(start: scanner.base, count: scanner.end)
    var prefix: [UInt8] = []
    var chain: [Int] = []
    var container = open
    while container >= 0 {
      chain.append(container)
      container = nodes[container].parent
    }
    for container in chain.reversed() {
      let isObject = nodes[container].kind == .object
      prefix.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
      if container != open {
        if isObject { prefix += #""":"#.utf8 }
        continue
      }
      if completed >= 0 ? nodes[container].count > 1 : afterComma {
        prefix += (isObject ? #""":null,"# : "null,").utf8
      }
      if completed >= 0 && isObject { prefix += #""":"#.utf8 }
    }
    if completed >= 0 {
      let value = nodes[completed]
      switch value.kind {
      case .object, .array: prefix += "[]".utf8
      case .string: prefix += #""""#.utf8
      case .integer, .real, .true, .false, .null: prefix += text[value.start..<value.end]
      }
    }
    let standIn = prefix + text[restart...]
    guard case .failure(let error) = Result(catching: { () throws(JSONError) in try JSON.parse(standIn) }) else {
      return wholeTextError(text)
    }
    // Before `restart` jansson has read `prefix` (one line, one column a byte); in the
    // whole text, what it reads of `text[..<restart]`: every byte but a NUL it lost,
    // columns counted in characters since the last line break.
    var lines = 0
    var lineStart = 0
    for index in 0..<restart where text[index] == 0x0A {
      lines += 1
      lineStart = index + 1
    }
    var column = 0
    for index in lineStart..<restart {
      let byte = text[index]
      if byte < 0x80 || (0xC2...0xF4).contains(byte) { column += 1 }
    }
    var lost = 0
    var lostOnLine = 0
    for node in nodes where node.end < restart && text[node.end] == 0 {
      switch node.kind {
      case .integer, .real, .true, .false, .null:
        lost += 1
        if node.end >= lineStart { lostOnLine += 1 }
      case .object, .array, .string:
        break
      }
    }
    return JSONError(
      message: error.message, line: error.line + lines,
      column: error.line > 1 ? error.column : error.column - prefix.count + column - lostOnLine,
      position: error.position - prefix.count + restart - lost)
  }

  /// jansson's error for the whole text (were the stand-in text ever accepted).
  private func wholeTextError(_ text: UnsafeRawBufferPointer) -> JSONError {
    switch Result(catching: { () throws(JSONError) in try JSON.parse(text) }) {
    case .failure(let error): return error
    case .success: return JSONError(message: "jansson reads what JSONScanner refuses", line: 0, column: 0, position: 0)
    }
  }
}
