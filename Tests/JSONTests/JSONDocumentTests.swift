import JSON
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `DocumentCheck.disagreement` (TestSupport, which FuzzJSON runs too) on `bytes`.
private func disagreement(_ bytes: [UInt8]) -> String? {
  bytes.withUnsafeBytes { DocumentCheck.disagreement($0) }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

private func check(_ text: [UInt8], _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
  let problem = disagreement(text)
  #expect(
    problem == nil, "\(String(decoding: text.prefix(200), as: UTF8.self)): \(problem ?? "")",
    sourceLocation: sourceLocation)
}

/// Every value of `text`, read.
private func read(_ text: String) throws -> JSONDocument {
  let bytes = bytes(text)
  return try bytes.withUnsafeBytes { try JSONDocument.parse($0) }
}

@Suite struct JSONDocumentTests {
  @Test func aKeyGivenTwiceKeepsItsFirstPlaceAndItsLastValue() throws {
    let document = try read(#"{"a": 1, "b": 2, "a": {"x": 3}, "c": 4, "b": 5, "\u0061": [6]}"#)
    let root = document.root
    #expect(root.count == 3)
    #expect(root.members.map(\.key) == ["a", "b", "c"])
    #expect(root["a"]?.isArray == true)
    #expect(root["a"]?.elements.map(\.integer) == [6])
    #expect(root["b"]?.integer == 5)
    check(bytes(#"{"a": 1, "b": 2, "a": {"x": 3}, "c": 4, "b": 5, "\u0061": [6]}"#))
    check(bytes(#"{"a":1,"a":2,"a":3}"#))
    check(bytes(#"[{"k":{"k":1,"k":2},"k":[{"k":3}]},{"k":null}]"#))
  }

  /// Objects of more than 16 members take another way to find keys given twice.
  @Test func largeObjectsResolveKeysGivenTwiceAsJanssonDoes() throws {
    var random = SeededRandom(state: 12)
    for round in 0..<200 {
      let keys = (0..<(17 + random.below(40))).map { _ in
        random.pick(["a", "b", "c", "\\u0061", "\\u0062", "long key \(random.below(30))", "k\(random.below(25))", ""])
      }
      let text = "{" + keys.enumerated().map { "\"\($0.element)\": \($0.offset)" }.joined(separator: ",") + "}"
      check(bytes(text), "round \(round)")
    }
    let document = try read("{" + (0..<40).map { "\"k\($0 % 20)\": \($0)" }.joined(separator: ",") + "}")
    #expect(document.root.count == 20)
    #expect(document.root.members.map { $0.value.integer } == (20..<40).map(Int64.init))
    #expect(document.root.members.map(\.key) == (0..<20).map { "k\($0)" })
  }

  @Test func stringsAreDecodedAsJanssonDecodesThem() throws {
    let document = try read(#"{"a\"b": "x\u0000y", "tab\t": "\n\t\u00e9\ud83d\ude00\/\\é", "": ""}"#)
    #expect(document.root["a\"b"]?.string == "x\u{0}y")
    #expect(document.root["tab\t"]?.string == "\n\té😀/\\é")
    #expect(document.root[""]?.string == "")
    for text in [
      #"{"a\"b": "x\u0000y", "tab\t": "\n\t\u00e9\ud83d\ude00\/\\é", "": ""}"#, #""\u0000""#,
      #"{"\u0000": 1}"#, #"{"a": "\u0000", "\u0000b": 2}"#, #"["\ud800"]"#, #"["\udc00\ud800"]"#,
      "\"\u{1}\"", "\"a\nb\"", #"{"long key with no escapes at all": "and a long value with none either"}"#,
    ] {
      check(bytes(text))
    }
    check([0x22, 0xC3, 0x28, 0x22])
    check([0x22, 0xED, 0xA0, 0x80, 0x22])
  }

  @Test func numbersAreIntegersOrRealsAsJansson() throws {
    let document = try read("[0, -0, 17, 1.5, 1e2, -9223372036854775808, 9223372036854775807, 1e-400]")
    #expect(
      document.root.elements.map(\.kind) == [.integer, .integer, .integer, .real, .real, .integer, .integer, .real])
    #expect(document.root.elements.map(\.integer) == [0, 0, 17, nil, nil, .min, .max, nil])
    for text in [
      "9223372036854775808", "-9223372036854775809", "1e309", "-1e309", "01", "1.", ".5", "-", "1e", "1e+",
      "[1\u{0},2]", "1\u{0}", "true\u{0}", "[true\u{0}\u{0}]", "{\"a\":1\u{0}}", "\"a\"\u{0}", "0e999999",
    ] {
      check(bytes(text))
    }
  }

  @Test func nestingIsLimitedWhereJanssonLimitsIt() {
    for depth in [1, 64, 65, 2047, 2048, 2049] {
      check(bytes(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)))
      check(bytes(String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)))
      check(bytes(String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)))
      // Refused for something else, deep down: jansson's error is re-read from the
      // innermost container on.
      check(bytes(String(repeating: "[", count: depth) + "1 x" + String(repeating: "]", count: depth)))
      check(bytes(String(repeating: "[", count: depth) + "{\"a\" 1}"))
      check(bytes(String(repeating: "{\"a\":", count: depth) + "[1,]"))
    }
  }

  @Test func refusedTextsGiveJanssonsError() throws {
    for text in [
      "", " ", "{", "[", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":1,}", "[1,]", "[1 2]", "{\"a\" 1}", "{1:2}",
      "nul", "tru", "{} {}", "[]]", "\"abc", "\u{7F}", "{\"a\":1}x", "[\"a\"\u{0}]",
      // jansson loses a NUL right after a number or literal: it counts neither its byte
      // nor its column.
      "[1\u{0} x", "[true\u{0},\n\u{0}]", "{\"a\":1\u{0},\"é\":2\u{0} x}", "[1\u{0},\"é\", 2\u{0}\u{0}]",
    ] {
      check(bytes(text))
    }
    #expect(throws: JSONError.self) { _ = try read("{\"a\":1,}") }
  }

  /// jansson's error is found by re-reading only the end of the text behind a stand-in
  /// for what comes before (`JSONDocument.Builder.janssonError`): tokens strung together
  /// at random put the error anywhere, after line breaks, characters of several bytes
  /// and NULs jansson loses, in any container.
  @Test func refusedTextsGiveJanssonsErrorAndPlaceWhereverTheyFail() {
    var random = SeededRandom(state: 99)
    let tokens =
      [
        "{", "}", "[", "]", ",", ":", " ", "\n", "\r\n", "\"a\"", "\"é😀\"", "\"\\u00e9\"", "1", "-0", "1.5e3", "true",
        "false", "null", "\u{0}", "\"\\u0000\"", "\"\\ud800\"", "tru", "01", "\"", "\\", "-", "1e", "é", "x",
        "\"a very long string that is longer than twenty bytes\"", "12345678901234567890123", "\u{1}", "[[", "]]",
        "{\"k\":", "\"k\":1,", "[1,", "1\u{0}", "\u{0}\u{0}", "\n\"é\"\n",
      ].map(bytes) + [[0xC3], [0xFF], [0x22, 0xE0, 0x80, 0x22], [0x22, 0xC3]]
    var refused = 0
    for round in 0..<6000 {
      var text: [UInt8] = []
      for _ in 0..<(1 + random.below(24)) { text += random.pick(tokens) }
      if disagreement(text) != nil { check(text, "round \(round)") }
      if (try? JSON.parse(text)) == nil { refused += 1 }
    }
    #expect(refused > 5000)
  }

  @Test func topLevelScalarsAndEmptyContainers() {
    for text in ["1", " \"x\" ", "true", "null", "{}", "[]", "[ ]", "{ }", "[{}, [], {\"a\": []}]", "-1.5e3"] {
      check(bytes(text))
    }
  }

  /// The seeds and example configurations, and thousands of mutations of them.
  @Test func configurationsAndTheirMutationsReadAsJanssonReadsThem() throws {
    let repository = String(#filePath).split(separator: "/").dropLast(3).map { "/" + $0 }.joined()
    var seeds: [[UInt8]] = []
    for path in [
      "Fuzz/corpus/FuzzRESTConfig/artsy", "Fuzz/corpus/FuzzRESTConfig/small", "examples/github/config.json",
      "examples/graphql/config.json", "examples/mastodon/config.json",
    ] {
      guard let file = fopen(repository + "/" + path, "rb") else { continue }
      defer { fclose(file) }
      var content: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        content += buffer[0..<count]
      }
      seeds.append(content)
    }
    #expect(seeds.count == 5)
    var random = SeededRandom(state: 7)
    let pieces = [
      "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u0000", "\\u0061", "\u{0}", "1", "-0", "1e400", "1.5", "true",
      "\"a\":1,", "\"kinds\":{},", "é", "\\ud83d\\ude00",
    ].map(bytes)
    var refused = 0
    for seed in seeds {
      check(seed)
      for _ in 0..<400 {
        var text = seed
        for _ in 0...random.below(3) {
          let at = random.below(text.count + 1)
          switch random.below(4) {
          case 0: text.insert(contentsOf: random.pick(pieces), at: at)
          case 1 where at < text.count: text.removeSubrange(at..<min(text.count, at + 1 + random.below(6)))
          case 2:
            // A member copied elsewhere: keys given twice.
            let start = random.below(text.count)
            let end = min(text.count, start + random.below(60))
            text.insert(contentsOf: text[start..<end], at: at)
          default:
            if at < text.count { text[at] = random.pick(pieces)[0] }
          }
        }
        if (try? JSON.parse(text)) == nil { refused += 1 }
        check(text)
      }
    }
    // Both verdicts are exercised.
    #expect(refused > 200 && refused < 1800)
  }
}
