import JSON
import TestSupport
import Testing

/// `ExactString` and the byte comparisons of `String`: equal, ordered and found by
/// UTF-8 bytes, never by canonical equivalence.
@Suite struct ExactStringTests {
  /// Pairs `String ==` calls equal whose bytes differ.
  static let equivalentPairs: [(String, String)] = [
    ("caf\u{E9}", "cafe\u{301}"), ("K", "\u{212A}"), (";", "\u{37E}"), ("\u{C5}", "\u{212B}"),
    ("a\u{323}\u{307}", "a\u{307}\u{323}"),
  ]

  @Test func canonicallyEquivalentSpellingsAreApart() {
    for (one, other) in Self.equivalentPairs {
      #expect(one == other, "the premise: String == merges \(Array(one.utf8)) and \(Array(other.utf8))")
      #expect(!one.hasSameBytes(as: other))
      #expect(ExactString(one) != ExactString(other))
      #expect(Set([ExactString(one), ExactString(other)]).count == 2)
      #expect(one.precedesByBytes(other) != other.precedesByBytes(one))
    }
  }

  @Test func equalBytesAreEqualWhateverTheStorage() {
    let long = String(repeating: "é", count: 40)
    // A bridged or sliced copy is stored apart from the literal; its bytes are the same.
    let copies = [String(Substring(long)), String(decoding: Array(long.utf8), as: UTF8.self), long + ""]
    for copy in copies {
      #expect(copy.hasSameBytes(as: long))
      #expect(ExactString(copy) == ExactString(long))
      #expect(ExactString(copy).hashValue == ExactString(long).hashValue)
    }
    #expect("".hasSameBytes(as: ""))
    #expect(!"a".hasSameBytes(as: ""))
    #expect(!"ab".hasSameBytes(as: "ac"))
  }

  @Test func shortASCIITextsAreComparedByEveryByte() {
    let letters = Array("abcdefghijklmnopqrst".utf8)
    for count in 1...letters.count {
      let text = String(decoding: letters[..<count], as: UTF8.self)
      #expect(text.hasSameBytes(as: String(decoding: Array(text.utf8), as: UTF8.self)))
      #expect(!text.hasSameBytes(as: String(decoding: letters[..<(count - 1)], as: UTF8.self)))
      for place in 0..<count {
        var changed = Array(letters[..<count])
        changed[place] = UInt8(ascii: "Z")
        #expect(!text.hasSameBytes(as: String(decoding: changed, as: UTF8.self)))
      }
    }
  }

  @Test func orderIsTheOrderOfTheBytes() {
    var random = SeededRandom(state: 25)
    let pieces = ["a", "b", "\u{E9}", "e\u{301}", "\u{212A}", "K", "\u{1F600}", ""]
    let words = (0..<200).map { _ in (0..<3).map { _ in random.pick(pieces) }.joined() }
    let sorted = words.map(ExactString.init).sorted().map { Array($0.string.utf8) }
    #expect(sorted == words.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
  }

  @Test func containsBytesFindsWhatCharactersHide() {
    // "," then a combining acute is one Character: String.contains misses the comma.
    let id = "a,\u{301}b"
    #expect(!id.contains(","))
    #expect(id.containsBytes(of: ","))
    #expect("abc".containsBytes(of: "bc") && "abc".containsBytes(of: "") && !"abc".containsBytes(of: "abcd"))
    #expect(!"caf\u{E9}".containsBytes(of: "e"))
    #expect("cafe\u{301}".containsBytes(of: "e"))
  }
}
