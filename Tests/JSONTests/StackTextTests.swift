import Testing

@testable import JSON

/// `StackText`'s writers, against the plain way of writing the same text.
@Suite struct StackTextTests {
  static func written(capacity: Int = 64, _ write: (inout StackText) -> Void) -> [UInt8]? {
    var buffer: [UInt8] = []
    return StackText.append(to: &buffer, capacity: capacity, write) ? buffer : nil
  }

  @Test func decimalsAreWhatSwiftPrints() {
    var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 101, 999, 1_000, 9_999, 10_000, 12_345, 99_999, 100_000]
    values += [Int64.max, Int64.min, Int64.max - 1, Int64.min + 1, -32_601, 4_294_967_296]
    var power: Int64 = 1
    for _ in 0..<18 {
      power *= 10
      values += [power - 1, power, power + 1, -power, -(power - 1)]
    }
    for value in values {
      #expect(Self.written { $0.putDecimal(value) } == Array(String(value).utf8), "\(value)")
    }
  }

  @Test func aDecimalThatDoesNotFitFailsTheText() {
    #expect(Self.written(capacity: 19) { $0.putDecimal(1) } == nil)
    #expect(Self.written(capacity: 20) { $0.putDecimal(Int64.min) } == Array(String(Int64.min).utf8))
  }

  /// Every length up to three words, with each byte that needs an escape at each place
  /// (and bytes around it that do not): only a text with none of them is written.
  @Test func stringContentIsWrittenOnlyWithoutEscapes() {
    let needingEscape: [UInt8] = [0x00, 0x01, 0x0A, 0x1F, 0x22, 0x5C]
    let plain: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF, UInt8(ascii: "a")]
    for length in 0...24 {
      let base = (0..<length).map { plain[$0 % plain.count] }
      #expect(base.withUnsafeBufferPointer { text in Self.written { $0.putStringContent(text) } } == base)
      for index in 0..<length {
        for byte in needingEscape {
          var text = base
          text[index] = byte
          #expect(text.withUnsafeBufferPointer { text in Self.written { $0.putStringContent(text) } } == nil)
        }
      }
    }
  }

  @Test func envelopeNamesArePackedAsKeysPackThem() {
    for name in JSONScanner.EnvelopeName.all {
      let packed = JSONScanner.Key(name.name).packed
      let expected = (packed.low, packed.high, packed.count)
      #expect((name.packed.low, name.packed.high, name.packed.count) == expected, "\(name.name)")
    }
  }

  /// Scanned short ASCII texts are made with a small string's layout: on this platform
  /// it holds, and what it makes is the same string as one made the ordinary way, in
  /// every way it is used (equality, hash, bytes, appending).
  @Test func smallASCIIStringsAreOrdinaryStrings() {
    #expect(SmallASCIIString.layoutHolds)
    var generator = SystemRandomNumberGenerator()
    for count in 1..<16 {
      for _ in 0..<50 {
        let bytes = (0..<count).map { _ in UInt8.random(in: 0..<0x80, using: &generator) }
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
        let made = SmallASCIIString.make(low: words.0, high: words.1, count: count)
        let ordinary = String(decoding: bytes, as: UTF8.self)
        #expect(made == ordinary && made.hashValue == ordinary.hashValue && Array(made.utf8) == bytes)
        #expect(made + "é" == ordinary + "é" && made.count == ordinary.count)
      }
    }
  }

  /// A `String` is written as its bytes would be, small ASCII ones from their words
  /// included: every length they have, with a byte that needs an escape at each place,
  /// and strings that are not small or not ASCII.
  @Test func stringsAreWrittenAsTheirBytes() {
    var texts: [String] = [
      "", "é", "日本語", String(repeating: "x", count: 16), String(repeating: "y", count: 40), "ab\u{0}c",
    ]
    for length in 1..<16 {
      let plain = String((0..<length).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
      texts.append(plain)
      for index in 0..<length {
        for odd in ["\"", "\\", "\n", "\u{1}", "\u{7F}", "é"] {
          var characters = Array(plain)
          characters[index] = Character(odd)
          texts.append(String(characters))
        }
      }
    }
    for text in texts {
      var bytes = Array(text.utf8)
      let expected = bytes.withUnsafeMutableBufferPointer { buffer in
        Self.written { $0.putStringContent(UnsafeBufferPointer(buffer)) }
      }
      #expect(Self.written { $0.putStringContent(text) } == expected, "\(Array(text.utf8))")
      // After other bytes, the same.
      #expect(
        Self.written {
          $0.put("[")
          $0.putStringContent(text)
          $0.put("]")
        } == expected.map { Array("[".utf8) + $0 + Array("]".utf8) })
    }
  }
}
