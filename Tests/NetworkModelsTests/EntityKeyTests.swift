import Testing

@testable import NetworkModels

/// `EntityKey`'s check of a kind and its hash.
@Suite struct EntityKeyTests {
  /// `^[a-z][a-z0-9_-]{0,63}$`, the README's pattern, written plainly.
  static func matchesPattern(_ kind: [UInt8]) -> Bool {
    func isLower(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
    func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    guard let first = kind.first, isLower(first), kind.count <= 64 else { return false }
    return kind.dropFirst().allSatisfy {
      isLower($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
    }
  }

  @Test func everyByteOfAKindIsCheckedAsThePatternSays() {
    for byte in UInt8.min...UInt8.max {
      for kind in [[byte], [UInt8(ascii: "a"), byte], [UInt8(ascii: "a"), byte, UInt8(ascii: "b")]] {
        let text = String(decoding: kind, as: UTF8.self)
        // Bytes that are not UTF-8 became U+FFFD: check what the key holds.
        let held = Array(text.utf8)
        #expect(EntityKey.isValidKind(text) == Self.matchesPattern(held), "\(held)")
      }
    }
    // Every byte at every place of kinds one and two words long, and between.
    for length in [7, 8, 9, 15, 16, 17, 24] {
      for place in 1..<length {
        for byte in UInt8.min...UInt8.max {
          var kind = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
          kind[place] = byte
          let held = Array(String(decoding: kind, as: UTF8.self).utf8)
          #expect(
            EntityKey.isValidKind(String(decoding: held, as: UTF8.self)) == Self.matchesPattern(held), "\(held)")
        }
      }
    }
    #expect(EntityKey.isValidKind(String(repeating: "a", count: 64)))
    #expect(!EntityKey.isValidKind(String(repeating: "a", count: 65)))
    #expect(!EntityKey.isValidKind(""))
  }

  @Test func equalKeysHashAlikeAndNeighboursApart() {
    let texts = [
      "", "a", "ab", "abc", "artist", "banksy", String(repeating: "x", count: 15),
      String(repeating: "x", count: 16), String(repeating: "x", count: 17), String(repeating: "y", count: 40),
      "é\u{0}😀",
    ]
    var hashes: [Int: EntityKey] = [:]
    for kind in texts {
      for id in texts {
        let key = EntityKey(kind: kind, id: id)
        // Made again from other storage: the same hash.
        let again = EntityKey(kind: String(decoding: Array(kind.utf8), as: UTF8.self), id: id + "")
        #expect(key.hashValue == again.hashValue && key == again)
        if let earlier = hashes[key._rawHashValue(seed: 0)] { Issue.record("\(key) and \(earlier) collide") }
        hashes[key._rawHashValue(seed: 0)] = key
      }
    }
    // Where one string ends and the next begins counts.
    #expect(
      EntityKey(kind: "ab", id: "c")._rawHashValue(seed: 0) != EntityKey(kind: "a", id: "bc")._rawHashValue(seed: 0))
    #expect(EntityKey(kind: "a", id: "")._rawHashValue(seed: 0) != EntityKey(kind: "", id: "a")._rawHashValue(seed: 0))
  }

  @Test func aDictionaryFindsKeysMadeApart() {
    var table: [EntityKey: Int] = [:]
    for index in 0..<2_000 { table[EntityKey(kind: "artist", id: "id-\(index)")] = index }
    for index in 0..<2_000 { #expect(table[EntityKey(kind: "artist", id: "id-" + String(index))] == index) }
    #expect(table[EntityKey(kind: "artists", id: "id-1")] == nil)
  }
}

/// Keys made of text from clients compare by bytes (`ExactString`).
@Suite struct ExactKeyTests {
  @Test func entityAndListKeysOfEquivalentSpellingsAreApart() {
    for (one, other) in [("caf\u{E9}", "cafe\u{301}"), ("K", "\u{212A}")] {
      #expect(EntityKey(kind: "artist", id: one) != EntityKey(kind: "artist", id: other))
      #expect(Set([EntityKey(kind: "artist", id: one), EntityKey(kind: "artist", id: other)]).count == 2)
      let lists = [
        ListKey(name: "byTag", paramsText: #"{"tag":"\#(one)"}"#),
        ListKey(name: "byTag", paramsText: #"{"tag":"\#(other)"}"#),
      ]
      #expect(lists[0] != lists[1] && Set(lists).count == 2)
      #expect(ListKey(name: one) != ListKey(name: other))
      #expect(
        EntityKey(kind: "artist", id: one) < EntityKey(kind: "artist", id: other)
          || EntityKey(kind: "artist", id: other) < EntityKey(kind: "artist", id: one))
    }
    #expect(EntityKey(kind: "a", id: "z") < EntityKey(kind: "b", id: "a"))
    #expect(ListKey(name: "x", paramsText: "{}") == ListKey(name: String("x"), paramsText: String("{}")))
  }
}
