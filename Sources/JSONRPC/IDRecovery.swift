/// Finds the `id` of a request that is not valid JSON, when its envelope can still be
/// read: a lone surrogate or invalid UTF-8 in the params must not leave the client
/// waiting for an answer it cannot match (JSON-RPC's `id: null`).
///
/// Only a top-level object is searched; the id is taken when it is an integer or a
/// string with no escapes and valid UTF-8, anything else gives nil. Values are skipped
/// by structure alone (strings, nesting), never decoded.
enum IDRecovery {
  static func id(in bytes: UnsafeRawBufferPointer) -> RequestID? {
    var reader = Reader(bytes: bytes)
    reader.skipSpace()
    guard reader.take(UInt8(ascii: "{")) else { return nil }
    while true {
      reader.skipSpace()
      guard let key = reader.rawString() else { return nil }
      reader.skipSpace()
      guard reader.take(UInt8(ascii: ":")) else { return nil }
      reader.skipSpace()
      if key.elementsEqual("id".utf8) { return reader.simpleID() }
      guard reader.skipValue() else { return nil }
      reader.skipSpace()
      guard reader.take(UInt8(ascii: ",")) else { return nil }
    }
  }

  private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func take(_ byte: UInt8) -> Bool {
      guard current == byte else { return false }
      index += 1
      return true
    }

    mutating func skipSpace() {
      while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    /// The bytes between the quotes of a string, escapes left as they are.
    mutating func rawString() -> UnsafeRawBufferPointer.SubSequence? {
      guard take(UInt8(ascii: "\"")) else { return nil }
      let start = index
      while let byte = current {
        if byte == UInt8(ascii: "\\") {
          index += 2
          continue
        }
        if byte == UInt8(ascii: "\"") {
          defer { index += 1 }
          return bytes[start..<index]
        }
        index += 1
      }
      return nil
    }

    mutating func skipValue() -> Bool {
      var depth = 0
      repeat {
        guard let byte = current else { return false }
        switch byte {
        case UInt8(ascii: "\""):
          guard rawString() != nil else { return false }
          continue
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
          if depth == 0 { return true }
          depth -= 1
        case UInt8(ascii: ","):
          if depth == 0 { return true }
        default: break
        }
        index += 1
      } while true
    }

    mutating func simpleID() -> RequestID? {
      if current == UInt8(ascii: "\"") {
        guard let raw = rawString(), !raw.contains(UInt8(ascii: "\\")) else { return nil }
        var text: String?
        let copied = Array(raw)
        text = String(validating: copied, as: UTF8.self)
        return text.map(RequestID.string)
      }
      let start = index
      if current == UInt8(ascii: "-") { index += 1 }
      while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
      guard index > start, let end = current,
        end == UInt8(ascii: ",") || end == UInt8(ascii: "}") || end == 0x20 || end == 0x0A || end == 0x0D
          || end == 0x09
      else { return nil }
      return Int64(String(decoding: bytes[start..<index], as: UTF8.self)).map(RequestID.integer)
    }
  }
}
