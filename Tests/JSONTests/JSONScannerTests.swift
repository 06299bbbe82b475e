import JSON
import Posix
import TestSupport
import Testing

/// The scanner's verdict on `bytes`.
private func scan(_ bytes: [UInt8]) -> Result<JSONScanner.ScannedObject?, JSONError> {
  bytes.withUnsafeBytes { buffer in
    Result { () throws(JSONError) in try JSONScanner.scanObjectMembers(buffer) }
  }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `bytes` readable in a failure message: printable ASCII as is, the rest as \xNN.
private func describe(_ bytes: [UInt8]) -> String {
  var text = ""
  for byte in bytes.prefix(160) {
    if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") {
      text.unicodeScalars.append(Unicode.Scalar(byte))
    } else {
      text += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
    }
  }
  return bytes.count > 160 ? text + "… (\(bytes.count) bytes)" : text
}

private func sameBytes(_ a: String?, _ b: String?) -> Bool {
  switch (a, b) {
  case (nil, nil): return true
  case (let a?, let b?): return a.utf8.elementsEqual(b.utf8)
  default: return false
  }
}

/// Nil when the scanner agrees with jansson on `bytes`: both reject, or both accept and
/// (for a top-level object) the scanner's members are jansson's, and so are those of a
/// nested object read in the same pass. Otherwise what differs.
private func disagreement(_ bytes: [UInt8]) -> String? {
  let reference = try? JSON.parse(bytes)
  var nestedKeys = ["params"]
  if let first = reference?.members.first?.key { nestedKeys.append(first) }
  for key in nestedKeys {
    if let problem = nestedDisagreement(bytes, key: key) { return "with the members of \(key): \(problem)" }
  }
  let scanned = scan(bytes)
  switch (reference, scanned) {
  case (nil, .failure):
    return nil
  case (nil, .success):
    return "scanner accepts what jansson rejects"
  case (.some, .failure(let error)):
    return "jansson accepts what the scanner rejects (\(error))"
  case (let value?, .success(let object)):
    guard value.isObject else {
      return object == nil ? nil : "top level is \(value.kind), but the scanner returned members"
    }
    guard let object else { return "top level is an object, but the scanner returned nil" }
    return memberDisagreement(bytes, value, object)
  }
}

/// Nil when scanning with the members of `key` gives the plain scan's verdict and, when
/// `key` names a non-empty object, that object's members as jansson reads them.
private func nestedDisagreement(_ bytes: [UInt8], key: String) -> String? {
  let nestedScan = bytes.withUnsafeBytes { buffer in
    Result { () throws(JSONError) in try JSONScanner.scanObjectMembers(buffer, withMembersOf: key) }
  }
  switch (scan(bytes), nestedScan) {
  case (.failure(let plain), .failure(let nested)):
    return plain.message == nested.message && plain.position == nested.position
      ? nil : "errors differ: \(plain) / \(nested)"
  case (.success(nil), .success(nil)):
    return nil
  case (.success(let plain?), .success(let (object, nested)?)):
    guard plain.members.map(\.range) == object.members.map(\.range) else { return "top-level members differ" }
    guard let value = (try? JSON.parse(bytes))?[key], value.isObject, value.count > 0 else {
      return nested == nil ? nil : "members of what is no non-empty object"
    }
    guard let nested else { return "no members of a non-empty object" }
    return memberDisagreement(bytes, value, nested)
  default:
    return "verdicts differ"
  }
}

private func memberDisagreement(_ bytes: [UInt8], _ value: JSON, _ object: JSONScanner.ScannedObject) -> String? {
  guard let first = bytes[object.range].first, first == UInt8(ascii: "{"),
    bytes[object.range].last == UInt8(ascii: "}")
  else { return "object range \(object.range) is not the object's text" }

  // Every member, duplicates included, has a range holding exactly one valid value.
  for member in object.members {
    let text = Array(bytes[member.range])
    guard (try? JSON.parse(text)) != nil, let first = text.first, let last = text.last,
      ![0x20, 0x09, 0x0A, 0x0D, 0x00].contains(first), ![0x20, 0x09, 0x0A, 0x0D, 0x00].contains(last)
    else { return "member \(member.key)'s range \(member.range) is no single value: \(describe(text))" }
  }

  let distinctKeys = Set(object.members.map { Array($0.key.utf8) })
  guard distinctKeys.count == value.count else {
    return "\(distinctKeys.count) distinct keys, jansson has \(value.count)"
  }
  for (key, expected) in value.members {
    guard let member = object.member(key) else { return "no member \(key)" }
    guard let parsed = try? JSON.parse(Array(bytes[member.range])), parsed == expected else {
      return "member \(key) is \(describe(Array(bytes[member.range]))), jansson has \(expected)"
    }
    guard member.kind.jsonKind == expected.kind else {
      return "member \(key) is a \(member.kind), jansson has \(expected.kind)"
    }
    guard member.integerValue == expected.integer else { return "member \(key): integer \(member.integerValue as Any)" }
    guard sameBytes(member.stringValue, expected.string) else {
      return "member \(key): string \(member.stringValue as Any), jansson has \(expected.string as Any)"
    }
    guard member.hasKey(key), expected.string.map(member.hasStringValue) ?? true else {
      return "member \(key): hasKey or hasStringValue disagrees"
    }
    guard member.boolValue == expected.bool else { return "member \(key): bool \(member.boolValue as Any)" }
    let empty = (expected.isObject || expected.isArray) && expected.count == 0
    guard member.isEmptyContainer == empty else { return "member \(key): isEmptyContainer \(member.isEmptyContainer)" }
  }
  return nil
}

/// Builds random JSON texts (valid ones, then damaged ones).
private struct Generator {
  var random: SeededRandom

  static let keys: [String] = [
    "jsonrpc", "id", "method", "params", "a", "b", "", "é", "e\u{301}", "kind", "😀", "x y",
  ]
  static let keyTexts: [String] = [
    #""\u0061""#, #""\u0069d""#, #""a\"b""#, #""\ud83d\ude00""#, #""\u00e9""#, #""tab\t""#, #""\/""#,
  ]
  static let numbers: [String] = [
    "0", "-0", "1", "-1", "17", "42", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "99999999999999999999", "1000000000000000000",
    "0.5", "-0.0", "1.5", "1e5", "1E+5", "1e-5", "2.5E-3", "1e308", "1.7976931348623157e308",
    "1.7976931348623159e308", "1e309", "-1e309", "1e-400", "0e999999", "123456789012345678901234567890",
    "123456789012345678901234567890.5", "0.000001e314", "10e307", "100e307",
  ]
  static let interesting: [UInt8] =
    Array("{}[],:\"\\01 9-+.eEutnfa\t\n\r".utf8) + [
      0x00, 0x01, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF,
    ]
  static let tokens: [String] = [
    "{", "}", "[", "]", ",", ":", " ", "\n", "\"a\"", "\"id\"", "1", "-0", "1.5e3", "true", "false", "null",
    "\0", "\"\\u0000\"", "\"\\ud800\"", "tru", "01", "\"", "\\", "-", "1e", "é",
  ]

  mutating func whitespace(_ out: inout [UInt8]) {
    guard random.chance(25) else { return }
    for _ in 0...random.below(3) { out.append(random.pick([0x20, 0x09, 0x0A, 0x0D])) }
  }

  mutating func string(_ out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for _ in 0..<random.pick([0, 1, 2, 3, 5, 8, 20]) {
      switch random.below(10) {
      case 0...4: out.append(UInt8(ascii: "a") + UInt8(random.below(26)))
      case 5: out += bytes(random.pick([#"\""#, #"\\"#, #"\/"#, #"\b"#, #"\f"#, #"\n"#, #"\r"#, #"\t"#]))
      case 6:
        let unit = random.pick([0, 0x1F, 0x41, 0xE9, 0x7FF, 0x800, 0xFFFF, 0xD7FF, 0xE000, random.below(0xD800)])
        let hex = String(unit, radix: 16)
        let digits = random.chance(50) ? hex : hex.uppercased()
        out += bytes("\\u" + String(repeating: "0", count: 4 - hex.count) + digits)
      case 7: out += bytes(random.pick([#"\ud83d\ude00"#, #"\uD800\uDC00"#, #"\udbff\udfff"#]))
      case 8: out += bytes(random.pick(["é", "€", "😀", "\u{FFFF}", "\u{10FFFF}", "\u{7F}", "ß"]))
      default: out += bytes(random.pick([" ", "jsonrpc", "2.0", "getFollowState", "banksy"]))
      }
    }
    out.append(UInt8(ascii: "\""))
  }

  mutating func key(_ out: inout [UInt8]) {
    if random.chance(20) {
      out += bytes(random.pick(Self.keyTexts))
    } else if random.chance(80) {
      out += bytes("\"" + random.pick(Self.keys) + "\"")
    } else {
      string(&out)
    }
  }

  mutating func value(_ out: inout [UInt8], depth: Int) {
    let choice = depth > 4 ? random.below(6) : random.below(9)
    switch choice {
    case 0, 1: string(&out)
    case 2, 3: out += bytes(random.pick(Self.numbers))
    case 4: out += bytes(random.pick(["true", "false", "null"]))
    case 5: out += bytes(String(Int64(bitPattern: random.next()) >> random.below(64)))
    case 6, 7: object(&out, depth: depth + 1)
    default:
      out.append(UInt8(ascii: "["))
      whitespace(&out)
      let count = random.pick([0, 1, 2, 3, 5])
      for index in 0..<count {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        whitespace(&out)
        value(&out, depth: depth + 1)
        whitespace(&out)
      }
      out.append(UInt8(ascii: "]"))
    }
  }

  mutating func object(_ out: inout [UInt8], depth: Int) {
    out.append(UInt8(ascii: "{"))
    whitespace(&out)
    let count = random.pick([0, 1, 2, 3, 4, 6])
    for index in 0..<count {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      whitespace(&out)
      key(&out)
      whitespace(&out)
      out.append(UInt8(ascii: ":"))
      whitespace(&out)
      value(&out, depth: depth)
      whitespace(&out)
    }
    out.append(UInt8(ascii: "}"))
  }

  /// A valid text: mostly request-like objects, sometimes any value.
  mutating func valid() -> [UInt8] {
    var out: [UInt8] = []
    whitespace(&out)
    switch random.below(10) {
    case 0...3:
      // A request envelope, members in random order, sometimes duplicated.
      var members: [[UInt8]] = [
        bytes(#""jsonrpc":"2.0""#),
        bytes(#""id":"#) + bytes(random.pick(["17", "\"abc\"", "null", "-3", "1.5"])),
        bytes(#""method":"getFollowState""#),
      ]
      var params: [UInt8] = []
      value(&params, depth: 1)
      members.append(bytes(#""params":"#) + params)
      if random.chance(20) { members.append(members[random.below(members.count)]) }
      for index in members.indices.reversed() { members.swapAt(index, random.below(index + 1)) }
      out.append(UInt8(ascii: "{"))
      for (index, member) in members.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        whitespace(&out)
        out += member
        whitespace(&out)
      }
      out.append(UInt8(ascii: "}"))
    case 4...7: object(&out, depth: 1)
    default: value(&out, depth: 1)
    }
    whitespace(&out)
    return out
  }

  /// A valid text with one to three bytes flipped, inserted or deleted, or cut short.
  mutating func mutated() -> [UInt8] {
    var out = valid()
    for _ in 0...random.below(3) {
      let byte = random.chance(70) ? random.pick(Self.interesting) : UInt8(truncatingIfNeeded: random.next())
      switch random.below(6) {
      case 0 where !out.isEmpty: out[random.below(out.count)] = byte
      case 1: out.insert(byte, at: random.below(out.count + 1))
      case 2 where !out.isEmpty: out.remove(at: random.below(out.count))
      case 3 where !out.isEmpty: out.removeLast(random.below(out.count) + 1)
      case 4 where out.count > 1:
        let start = random.below(out.count)
        let end = min(out.count, start + 1 + random.below(8))
        out.insert(contentsOf: out[start..<end], at: random.below(out.count + 1))
      default:
        // A NUL where jansson's lexer has a quirk: right after a number or literal.
        if let index = out.indices.filter({ out[$0] &- 0x30 < 10 || out[$0] == UInt8(ascii: "e") }).last {
          out.insert(0, at: index + 1)
        }
      }
    }
    return out
  }

  /// Tokens strung together at random: nearly valid, with many near misses.
  mutating func tokenSoup() -> [UInt8] {
    var out: [UInt8] = random.chance(60) ? [UInt8(ascii: "{")] : []
    for _ in 0..<random.below(12) { out += bytes(random.pick(Self.tokens)) }
    if random.chance(60) { out.append(UInt8(ascii: "}")) }
    return out
  }

  /// Strings (maybe a key and value) of multi-byte sequences built from the bytes at the
  /// edges of UTF-8's ranges: overlong forms, surrogates, beyond U+10FFFF, cut short.
  mutating func utf8Soup() -> [UInt8] {
    let leads: [UInt8] = [
      0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8,
    ]
    let trails: [UInt8] = [0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0x7F, 0x41]
    var text: [UInt8] = []
    for _ in 0..<(1 + random.below(3)) {
      if random.chance(30) { text.append(UInt8(ascii: "a") + UInt8(random.below(26))) }
      let lead = random.pick(leads)
      text.append(lead)
      let expected = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : 1
      let count = random.chance(85) ? expected : random.below(4)
      for _ in 0..<count { text.append(random.chance(80) ? random.pick(Array(trails.prefix(6))) : random.pick(trails)) }
    }
    let string = [UInt8(ascii: "\"")] + text + [UInt8(ascii: "\"")]
    return random.chance(50) ? string : bytes("{") + string + bytes(":") + string + bytes("}")
  }

  /// Random bytes, often invalid UTF-8.
  mutating func noise() -> [UInt8] {
    var out: [UInt8] = []
    if random.chance(50) { out += bytes(random.chance(50) ? "{\"" : "\"") }
    for _ in 0..<random.below(24) {
      out.append(random.chance(50) ? random.pick(Self.interesting) : UInt8(truncatingIfNeeded: random.next()))
    }
    if random.chance(50) { out += bytes(random.chance(50) ? "\"}" : "\"") }
    return out
  }
}

private func nested(_ depth: Int, open: String, close: String, inner: String = "") -> String {
  String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)
}

@Suite struct JSONScannerTests {
  static let request = #"{"jsonrpc":"2.0","id":17,"method":"getFollowState","params":{"kind":"artist","id":"banksy"}}"#

  @Test func scansARequestEnvelope() throws {
    let text = bytes(Self.request)
    let object = try #require(try scan(text).get())
    #expect(object.members.map(\.key) == ["jsonrpc", "id", "method", "params"])
    #expect(object.members.map(\.kind) == [.string, .integer, .string, .object])
    #expect(object.range == 0..<text.count)
    let slices = object.members.map { String(decoding: text[$0.range], as: UTF8.self) }
    #expect(slices == [#""2.0""#, "17", #""getFollowState""#, #"{"kind":"artist","id":"banksy"}"#])
    #expect(object.member("jsonrpc")?.stringValue == "2.0")
    #expect(object.member("id")?.integerValue == 17)
    #expect(object.member("id")?.stringValue == nil)
    #expect(object.member("method")?.stringValue == "getFollowState")
    #expect(object["params"]?.isEmptyContainer == false)
    #expect(object.member("params")?.integerValue == nil)
    #expect(object.member("absent") == nil)
  }

  @Test func reportsKindsRangesAndEmptyContainers() throws {
    let text = bytes(
      " {\"o\" : { \n } , \"a\":[ ],\"s\":\"x\",\"i\":-0,\"r\":1e2,\"t\":true,\"f\":false,\"n\":null,\"q\":[0]}\r\n")
    let object = try #require(try scan(text).get())
    #expect(object.members.map(\.kind) == [.object, .array, .string, .integer, .real, .true, .false, .null, .array])
    #expect(object.members.map(\.isEmptyContainer) == [true, true, false, false, false, false, false, false, false])
    #expect(
      object.members.map { String(decoding: text[$0.range], as: UTF8.self) } == [
        "{ \n }", "[ ]", "\"x\"", "-0", "1e2", "true", "false", "null", "[0]",
      ])
    #expect(object.range == 1..<(text.count - 2))
    #expect(object["i"]?.integerValue == 0)
    #expect(object["t"]?.boolValue == true)
    #expect(object["f"]?.boolValue == false)
    #expect(object["n"]?.boolValue == nil)
  }

  @Test func resolvesEscapesInKeysAndValues() throws {
    let text = bytes(#"{"\u006detho\u0064":"a\nb\u00e9\ud83d\ude00\/\"","a\"b":1,"\ud83d\ude00":2,"tab\t":3,"":4}"#)
    let object = try #require(try scan(text).get())
    #expect(object.members.map(\.key) == ["method", "a\"b", "😀", "tab\t", ""])
    #expect(object.member("method")?.stringValue == "a\nbé😀/\"")
    #expect(object.member("a\"b")?.integerValue == 1)
    #expect(object.member("😀")?.integerValue == 2)
    #expect(object.member("")?.integerValue == 4)
    #expect(disagreement(text) == nil)
  }

  /// Short keys and values are read from two loaded words when they are plain; one
  /// byte that is not plain (an escape, a control byte, non-ASCII, an early end), at any
  /// place of a string of any length around the words' size, must send it to the
  /// general scan with the same outcome as jansson's, accepted or not.
  @Test func shortStringsWithOneByteThatIsNotPlain() {
    let notPlain: [[UInt8]] = [
      Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\n"#.utf8), Array(#"\u0041"#.utf8), Array(#"\u0000"#.utf8),
      [0x01], [0x1F], [0x0A], [0x7F], Array("é".utf8), [0xFF], [0x80], Array(#"""#.utf8), [0x00],
    ]
    for length in 0...18 {
      let plain = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
      for index in 0...length {
        for odd in notPlain {
          let text = Array(plain[..<index]) + odd + Array(plain[index...])
          for message in [
            Array(#"{""#.utf8) + text + Array(#"":"v","pad":"................"}"#.utf8),
            Array(#"{"k":""#.utf8) + text + Array(#""}"#.utf8), Array(#"{"k":""#.utf8) + text,
            Array(#"{"k":""#.utf8) + text + Array(#"","pad":"................"}"#.utf8),
            Array(#"{"jsonrpc":"2.0","id":1,"method":""#.utf8) + text + Array(#"","params":{"kind":""#.utf8) + text
              + Array(#"","id":"i"},"pad":"................"}"#.utf8),
          ] {
            #expect(disagreement(message) == nil, "\(describe(message))")
            let problem = message.withUnsafeBytes {
              EnvelopeCheck.disagreement($0, workspace: JSONScanner.Workspace())
            }
            #expect(problem == nil, "\(describe(message)): \(problem ?? "")")
          }
        }
      }
    }
  }

  @Test func keysAndStringsOfEveryLengthRoundTrip() throws {
    // Up to 16 bytes are kept inline (packed differently near the end of the input);
    // longer ones, and any with escapes, are decoded while scanning.
    for length in [0, 1, 7, 8, 9, 15, 16, 17, 40] {
      let word = String((0..<length).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
      let accented = String(repeating: "é", count: length / 2)
      let cases: [(text: String, key: String, value: String)] = [
        ("{\"\(word)\":\"\(word)\",\"pad\":\"................\"}", word, word),
        ("{\"pad\":0,\"\(word)\":\"\(word)\"}", word, word),
        ("{\"\(accented)\":\"\(accented)\"}", accented, accented),
        ("{\"\(word)\\n\":\"\\t\(word)\"}", word + "\n", "\t" + word),
      ]
      for (text, key, value) in cases {
        let object = try #require(try scan(bytes(text)).get(), "\(text)")
        let member = try #require(object.member(key), "\(text)")
        #expect(member.key == key)
        #expect(member.stringValue == value)
        #expect(member.hasKey(key))
        #expect(member.hasStringValue(value))
        #expect(!member.hasStringValue(value + "x"))
        #expect(!member.hasKey(key + "x"))
        #expect(object.member(key + "x") == nil)
        if !key.isEmpty { #expect(object.member(String(key.dropLast())) == nil) }
        #expect(disagreement(bytes(text)) == nil)
      }
    }
  }

  @Test func duplicateKeysResolveToTheLastLikeJansson() throws {
    let text = bytes(#"{"id":1,"method":"a","id":"two","\u0069d":3.5}"#)
    let object = try #require(try scan(text).get())
    #expect(object.members.count == 4)
    #expect(object.member("id")?.kind == .real)
    #expect(String(decoding: text[object.member("id")!.range], as: UTF8.self) == "3.5")
    #expect(try JSON.parse(text)["id"]?.real == 3.5)
    #expect(disagreement(text) == nil)

    // Keys are compared byte for byte, as jansson does, not by canonical equivalence.
    let decomposed = bytes("{\"é\":1,\"e\u{301}\":2}")
    let members = try #require(try scan(decomposed).get())
    #expect(members.member("é")?.integerValue == 1)
    #expect(members.member("e\u{301}")?.integerValue == 2)
    #expect(disagreement(decomposed) == nil)
  }

  @Test func nonObjectsAreValidatedButGiveNil() throws {
    for text in ["[1,2]", " 17 ", "\"x\"", "null", "[{\"a\":1}]"] {
      #expect(try scan(bytes(text)).get() == nil, "\(text)")
    }
    #expect(throws: JSONError.self) { try scan(bytes("[1,2")).get() }
    #expect(throws: JSONError.self) { try scan([]).get() }
  }

  @Test func errorsCarryTheirPosition() {
    guard case .failure(let error) = scan(bytes("{\"a\": 1,\n  \"b\": }")) else {
      Issue.record("expected an error")
      return
    }
    #expect(error.line == 2)
    #expect(error.column == 8)
    #expect(error.position == 16)

    guard case .failure(let utf8) = scan([0x7B, 0x22, 0xC3, 0x28, 0x22]) else {
      Issue.record("expected an error")
      return
    }
    #expect(utf8.position == 2)
    #expect(utf8.message.contains("0xc3"))
  }

  /// Edge cases, each with the verdict jansson 2.14 gives; the scanner must agree.
  static let tricky: [(text: [UInt8], valid: Bool)] = {
    var cases: [(String, Bool)] = [
      // Structure
      ("{}", true), (" \t\n\r{}\r\n ", true), ("{ }", true), ("[]", true), ("1", true), ("\"x\"", true),
      ("true", true), ("null", true), ("", false), ("   ", false), ("{", false), ("}", false),
      ("{\"a\"}", false), ("{\"a\":}", false), ("{\"a\":1,}", false), ("{,}", false), ("[1,]", false),
      ("[,1]", false), ("{\"a\":1}{}", false), ("{\"a\":1} x", false), ("{\"a\" 1}", false), ("{1:2}", false),
      ("{'a':1}", false), ("{\"a\":1,,\"b\":2}", false), ("{\"a\"::1}", false), ("[1 2]", false),
      ("{\"a\":[1,{\"b\":[]}],\"c\":{}}", true), ("{\"a\":1]", false), ("[1}", false), ("\u{0C}{}", false),
      ("{}\u{0B}", false), ("\u{FEFF}{}", false), ("{\"a\":1,\"a\":2}", true),
      // Numbers
      ("0", true), ("-0", true), ("01", false), ("-01", false), ("+1", false), (".5", false), ("1.", false),
      ("1.e5", false), ("1e", false), ("1e+", false), ("1E+2", true), ("1e-2", true), ("-", false),
      ("--1", false), ("0x10", false), ("1.5e308", true), ("1e309", false), ("-1e309", false),
      ("1e-400", true), ("9223372036854775807", true), ("-9223372036854775808", true),
      ("9223372036854775808", false), ("-9223372036854775809", false), ("18446744073709551616", false),
      ("12345678901234567890123", false), ("12345678901234567890123.0", true), ("1.7976931348623157e308", true),
      ("1.7976931348623158e308", true), ("1.7976931348623159e308", false),
      (
        "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792",
        false
      ),
      ("[1e309]", false), ("{\"a\":-1e99999}", false), ("0e99999", true), ("1e-99999999999999999999", true),
      ("0.", false), ("00", false), ("1 2", false), ("NaN", false), ("Infinity", false), ("-Infinity", false),
      ("[-]", false), ("-a", false), ("1.5.3", false), ("2e3e4", false), ("[1e5,-0.0,0.1E-0]", true),
      // Literals
      ("tru", false), ("truee", false), ("True", false), ("nul", false), ("falsee", false), ("[true,false,null]", true),
      ("[true1]", false), ("nulll", false),
      // Strings
      (#""\u0000""#, true), (#"{"a\u0000":1}"#, false), (#"{"a":"\u0000"}"#, true), (#"{"a":{"\u0000":1}}"#, false),
      (#""\ud800""#, false), (#""\udc00""#, false), (#""\ud800\udc00""#, true), (#""\ud83d\ude00""#, true),
      (#""\udbff\udfff""#, true), (#""\ud800\u0041""#, false), (#""\ud800x""#, false), (#""\ud800\ud800""#, false),
      (#""\ud800\\udc00""#, false), (#""\u12""#, false), (#""\u12G4""#, false), (#""\uABCD""#, true),
      (#""\uabcd""#, true),
      (#""\x""#, false), (#""\'""#, false), ("\"a\tb\"", false), ("\"a\nb\"", false), (#""\u001f""#, true),
      ("\"\u{7F}\"", true), ("\"\u{1F}\"", false), ("\"é€😀\"", true), ("\"abc", false), ("\"\\", false),
      (#""\/\b\f\n\r\t\"\\""#, true), ("\"\u{FFFF}\u{10FFFF}\"", true),
      // jansson's NUL quirk: one NUL right after a number or literal is lost.
      ("1\0", true), ("1\0\0", false), ("[1\0,2]", true), ("true\0", true), ("null\0", true), ("false\0", true),
      ("1.5\0", true), ("-0\0", true), ("1e5\0", true), ("\"a\"\0", false), ("{\"a\":1\0}", true),
      ("{\"a\":1}\0", false),
      ("\01", false), ("1 \0", false), ("{\"a\":null\0,\"b\":2}", true), ("-\01", false), ("[\0]", false),
      ("{\"a\":[1\0]}", true), ("{\"a\":\"x\"\0}", false), ("{\"a\"\0:1}", false), ("\0", false),
      ("{\"a\":1\0 }", true), ("[1\0\0]", false), ("tru\0e", false),
      // Depth: every value counts, the top-level one is at depth 1, at most 2048.
      (nested(2048, open: "[", close: "]"), true), (nested(2049, open: "[", close: "]"), false),
      (nested(2047, open: "[", close: "]", inner: "1"), true), (nested(2048, open: "[", close: "]", inner: "1"), false),
      (nested(2047, open: "[", close: "]", inner: "{}"), true),
      (nested(2048, open: "[", close: "]", inner: "{}"), false),
      (nested(2047, open: "{\"a\":", close: "}", inner: "1"), true),
      (nested(2048, open: "{\"a\":", close: "}", inner: "1"), false),
      (nested(2047, open: "{\"a\":", close: "}", inner: "{}"), true),
      (nested(2048, open: "{\"a\":", close: "}", inner: "{}"), false),
      (nested(1023, open: "[{\"k\":", close: "}]", inner: "[]"), true),
      (nested(1024, open: "[{\"k\":", close: "}]", inner: "[]"), false),
      (nested(1023, open: "{\"k\":[", close: "]}", inner: "null"), true),
      (nested(1024, open: "{\"k\":[", close: "]}", inner: "null"), false),
      ("{\"a\":" + nested(2047, open: "[", close: "]") + "}", true),
      ("{\"a\":" + nested(2048, open: "[", close: "]") + "}", false),
      (nested(100, open: "[", close: "]", inner: "1") + "]", false),
      (nested(100, open: "[", close: "]", inner: "1").dropLast().description, false),
      (nested(100, open: "[{\"k\":", close: "}]", inner: "1").replacingLastClose(), false),
    ]
    // Invalid UTF-8, in strings and out.
    let raw: [([UInt8], Bool)] = [
      ([0x22, 0xC3, 0xA9, 0x22], true), ([0x22, 0xC3, 0x22], false), ([0x22, 0xC3], false),
      ([0x22, 0xC0, 0x80, 0x22], false), ([0x22, 0xC1, 0xBF, 0x22], false), ([0x22, 0xE0, 0x80, 0x80, 0x22], false),
      ([0x22, 0xE0, 0xA0, 0x80, 0x22], true), ([0x22, 0xED, 0xA0, 0x80, 0x22], false),
      ([0x22, 0xED, 0x9F, 0xBF, 0x22], true), ([0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22], false),
      ([0x22, 0xF0, 0x90, 0x80, 0x80, 0x22], true), ([0x22, 0xF4, 0x8F, 0xBF, 0xBF, 0x22], true),
      ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], false), ([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], false),
      ([0x22, 0x80, 0x22], false), ([0x22, 0xBF, 0x22], false), ([0x22, 0xFF, 0x22], false),
      ([0x22, 0xE2, 0x82, 0x22], false), ([0x22, 0xF0, 0x9F, 0x98, 0x22], false),
      ([0x22, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0xE2, 0x82, 0xAC, 0x22], true),
      ([0x22, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0xE2, 0x82, 0x41, 0x22], false),
      ([0x7B, 0x22, 0xC3, 0xA9, 0x22, 0x3A, 0x31, 0x7D], true), ([0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D], false),
      ([0xC3, 0xA9], false), ([0x31, 0xFF], false), ([0x22, 0x00, 0x22], false),
      (Array(#""abcdefgh\u0000ijklmnop""#.utf8), true), (Array("\"abcdefghijklmnop\u{1}qrstuvwxyz\"".utf8), false),
      (Array("\"abcdefghijklmnopqrstuvwxyz0123456789\"".utf8), true),
    ]
    return cases.map { (bytes($0.0), $0.1) } + raw
  }()

  @Test func agreesWithJanssonOnTrickyInput() {
    for (text, valid) in Self.tricky {
      let janssonAccepts = (try? JSON.parse(text)) != nil
      #expect(janssonAccepts == valid, "jansson's verdict on \(describe(text)) changed")
      if let problem = disagreement(text) {
        Issue.record("\(describe(text)): \(problem)")
      }
    }
  }

  /// Random inputs, valid and not, on which the scanner must agree with jansson. For a
  /// longer hunt set JSONSCANNER_DIFF_COUNT (inputs) and JSONSCANNER_DIFF_SEED.
  @Test func differentialAgainstJansson() {
    let total = Process.environment("JSONSCANNER_DIFF_COUNT").flatMap { Int($0) } ?? 40_000
    let seed = Process.environment("JSONSCANNER_DIFF_SEED").flatMap { UInt64($0) } ?? 0x6E65_746D_6F64_656C
    var generator = Generator(random: SeededRandom(state: seed))
    var counts = (inputs: 0, accepted: 0, objects: 0, members: 0)
    var failures = 0
    for index in 0..<total {
      let input: [UInt8]
      switch index % 10 {
      case 0, 1, 2, 3: input = generator.valid()
      case 4, 5, 6: input = generator.mutated()
      case 7: input = generator.tokenSoup()
      case 8: input = generator.utf8Soup()
      default: input = generator.noise()
      }
      counts.inputs += 1
      if let problem = disagreement(input) {
        failures += 1
        if failures <= 20 { Issue.record("input #\(index) \(describe(input)): \(problem)") }
      } else if case .success(let object) = scan(input) {
        counts.accepted += 1
        if let object {
          counts.objects += 1
          counts.members += object.members.count
        }
      }
    }
    print(
      "JSONScanner differential: \(counts.inputs) inputs, \(counts.accepted) accepted (\(counts.objects) objects,"
        + " \(counts.members) members), \(counts.inputs - counts.accepted - failures) rejected,"
        + " \(failures) disagreements")
    #expect(failures == 0)
    #expect(counts.accepted > total / 4)
    #expect(counts.inputs - counts.accepted > total / 4)
  }

  /// Prints ns per request for the scanner and for `JSON.parse`; no assertion. Run with
  /// `JSONSCANNER_BENCH=1 swift test -c release --filter JSONScannerTests/benchmark`.
  @Test(.enabled(if: Process.environment("JSONSCANNER_BENCH") != nil)) func benchmark() throws {
    let inputs = [
      Self.request,
      #"{"jsonrpc":"2.0","id":18,"method":"setFollowState","params":{"kind":"artist","id":"banksy","follow":true}}"#,
      #"{"jsonrpc": "2.0", "method": "ping", "id": "c0ffee-\u00e9"}"#,
    ]
    for text in inputs {
      let input = bytes(text)
      let rounds = 1_000_000
      var checksum = 0
      let clock = ContinuousClock()
      let scanTime = input.withUnsafeBytes { buffer in
        clock.measure {
          for _ in 0..<rounds {
            if let object = try? JSONScanner.scanObjectMembers(buffer) {
              checksum &+= object.members.count &+ Int(object.member("id")?.integerValue ?? 0)
            }
          }
        }
      }
      let lookupTime = input.withUnsafeBytes { buffer in
        clock.measure {
          for _ in 0..<rounds {
            if let object = try? JSONScanner.scanObjectMembers(buffer) {
              checksum &+= Int(object.member("id")?.integerValue ?? 0)
              checksum &+= object.member("jsonrpc")?.hasStringValue("2.0") == true ? 1 : 0
              checksum &+= object.member("method")?.stringValue?.utf8.count ?? 0
              checksum &+= object.member("params")?.range.count ?? 0
            }
          }
        }
      }
      let parseTime = input.withUnsafeBytes { buffer in
        clock.measure {
          for _ in 0..<rounds {
            if let value = try? JSON.parse(buffer) { checksum &+= value.count }
          }
        }
      }
      func nanoseconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return (Double(parts.seconds) * 1e18 + Double(parts.attoseconds)) / 1e9 / Double(rounds)
      }
      print(
        "JSONScanner benchmark (\(input.count) bytes): scanObjectMembers \(nanoseconds(scanTime)) ns,"
          + " with 4 lookups \(nanoseconds(lookupTime)) ns, JSON.parse \(nanoseconds(parseTime)) ns"
          + " (checksum \(checksum))")
    }
  }
}

extension String {
  /// Replaces the last `]` with `}`, breaking the nesting at its outermost level.
  fileprivate func replacingLastClose() -> String {
    guard let index = lastIndex(of: "]") else { return self }
    var copy = self
    copy.replaceSubrange(index...index, with: "}")
    return copy
  }
}
