import TestSupport
import Testing

@testable import JSONRPC

/// `FrameSplitter.contentLength(in:)` reads header bytes where they are; this is the
/// plain way it replaced (lines split, each name a lowercased `String`), kept as the
/// oracle.
private func referenceContentLength(in headers: ArraySlice<UInt8>) -> Int? {
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

@Suite struct ContentLengthTests {
  /// Header lines made of pieces that matter (names in any case, look-alikes,
  /// separators, digits, stray bytes) agree with the reference, slices at an offset
  /// included.
  @Test func agreesWithTheStringReadingOnRandomHeaders() {
    func bytes(_ texts: [String]) -> [[UInt8]] { texts.map { Array($0.utf8) } }
    let names = bytes([
      "Content-Length", "content-length", "CONTENT-LENGTH", "cONTENT-lENGTH", "Content-Lengt", "Content-Lengthh",
      "Content\rLength", "Content-Type", "X", "\u{212A}", "Ä", "", " Content-Length",
    ])
    let separators = bytes([":", ": ", ":\t", " :", "", "::"])
    let values = bytes(["0", "7", "42", " 42 ", "4 2", "123456789012345", "1234567890123456", "-1", "x", "", "é"])
    let ends = bytes(["\r\n", "\n", "\r", "", "\n\n"])
    var rng = SeededRandom(state: 30)
    func any(_ choices: [[UInt8]]) -> [UInt8] { choices[Int.random(in: 0..<choices.count, using: &rng)] }
    var found = 0
    for _ in 0..<20_000 {
      var headers: [UInt8] = Array(repeating: UInt8(ascii: "p"), count: Int.random(in: 0...2, using: &rng))
      for _ in 0..<Int.random(in: 0...4, using: &rng) {
        headers += any(names) + any(separators) + any(values) + any(ends)
      }
      let slice = headers[min(headers.count, 2)...]
      let expected = referenceContentLength(in: slice)
      #expect(FrameSplitter.contentLength(in: slice) == expected, "headers \(Array(slice))")
      if expected != nil { found += 1 }
    }
    // The generator makes lengths that count, not only refusals.
    #expect(found > 500)
  }
}
