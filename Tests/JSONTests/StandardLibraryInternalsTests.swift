import Testing

@testable import JSON

/// What `StandardLibraryInternals.swift` relies on, checked against this toolchain: each
/// test fails when a toolchain changes it, and the fallbacks give what the fast path gives.
@Suite struct StandardLibraryInternalsTests {
  static let samples =
    (0...20).map { String(repeating: "k", count: $0) } + ["é", "caf\u{E9}", "cafe\u{301}", "a\u{1F600}"]

  /// 1. The small-string layout: the start-up check holds here, and a string made from
  /// its packed bytes is, bit for bit, the string made the ordinary way.
  @Test func smallStringLayoutHolds() throws {
    // Required: no string is made from bits that might be wrong.
    try #require(StandardLibraryInternals.smallStringLayoutHolds)
    let letters = Array("ABCDEFGHIJKLMNO".utf8)
    for count in 1..<16 {
      var words: (UInt64, UInt64) = (0, 0)
      withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: letters[..<count]) }
      let ordinary = String(decoding: letters[..<count], as: UTF8.self)
      let made = SmallASCIIString.make(low: words.0, high: words.1, count: count)
      #expect(made == ordinary && made.utf8.elementsEqual(ordinary.utf8))
      #expect(unsafeBitCast(made, to: (UInt64, UInt64).self) == unsafeBitCast(ordinary, to: (UInt64, UInt64).self))
      let parts = SmallASCIIString.parts(of: ordinary)
      #expect(parts?.low == words.0 && parts?.high == words.1 && parts?.count == count)
      // The fallback: no parts, so the bytes are read through the UTF-8 view.
      #expect(SmallASCIIString.parts(of: ordinary, layoutHolds: false) == nil)
    }
    // Not small, or not ASCII: no parts.
    #expect(SmallASCIIString.parts(of: String(repeating: "k", count: 16)) == nil)
    #expect(SmallASCIIString.parts(of: "é") == nil)
  }

  /// 1. The scanner's texts: made from packed bytes, or the plain way, the same strings.
  @Test func inlineTextsAreTheSameEitherWay() {
    for sample in Self.samples where sample.utf8.count <= 16 {
      let text = Array(sample.utf8).withUnsafeBufferPointer { JSONScanner.InlineText(packed: .init($0)) }
      let fast = text.inlineString(smallStringsHold: true)
      let plain = text.inlineString(smallStringsHold: false)
      #expect(fast.utf8.elementsEqual(sample.utf8) && plain.utf8.elementsEqual(sample.utf8), "\(sample)")
    }
  }

  /// 2. A string is its two words, and equal words are the same bytes; the answer
  /// agrees with the byte comparison (the fallback) on every pair.
  @Test func aStringIsItsTwoWords() {
    #expect(String.isTwoWords)
    let large = String(repeating: "x", count: 40)
    let copy = large
    #expect(large.hasSameRepresentation(as: copy) == true)
    #expect("short".hasSameRepresentation(as: "short") == true)
    #expect("short".hasSameRepresentation(as: "shorT") == false)
    for a in Self.samples {
      for b in Self.samples {
        let plain = a.hasSameBytesInBuffers(as: b)
        #expect(a.hasSameBytes(as: b) == plain, "\(a) \(b)")
        if let told = a.hasSameRepresentation(as: b) { #expect(told == plain, "\(a) \(b)") }
      }
    }
  }

  /// 3. `Set` and `Dictionary` ask a `SeededHashable` for `_rawHashValue(seed:)`, not
  /// `hash(into:)`; and `hash(into:)` (the fallback) feeds the same base.
  @Test func tablesAskForTheRawHash() {
    Probe.rawHashCalls = 0
    Probe.hashIntoCalls = 0
    var set = Set<Probe>()
    for value in 0..<64 { set.insert(Probe(value: value)) }
    #expect(set.contains(Probe(value: 7)))
    #expect(Probe.rawHashCalls >= 65)
    #expect(Probe.hashIntoCalls == 0)
    var hasher = Hasher()
    Probe(value: 7).hash(into: &hasher)
    var expected = Hasher()
    expected.combine(7)
    #expect(hasher.finalize() == expected.finalize())
  }

  /// 4. The object lent by `withGuaranteedReference` is the one behind the reference.
  @Test func guaranteedReferenceIsTheObject() {
    final class Box { let value = 42 }
    let box = Box()
    let unmanaged = Unmanaged.passUnretained(box)
    #expect(unmanaged.withGuaranteedReference { $0 === box && $0.value == 42 })
  }
}

/// Counts which of `Hashable`'s entry points a table calls.
struct Probe: SeededHashable {
  nonisolated(unsafe) static var rawHashCalls = 0
  nonisolated(unsafe) static var hashIntoCalls = 0
  let value: Int

  var seededHashBase: Int {
    Probe.rawHashCalls += 1
    return value
  }

  func hash(into hasher: inout Hasher) {
    Probe.hashIntoCalls += 1
    hasher.combine(value)
  }
}
