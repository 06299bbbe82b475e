import NetworkModels
import Testing

/// `RESTConfiguration.parse(utf8:)` (what `check-config` and `--config` run on a file's
/// bytes) reads them as `parse(String(decoding:as:))` does: in place when they are
/// valid UTF-8, as `String(decoding:)` repairs them otherwise.
@Suite struct RESTConfigurationBytesTests {
  private static func verdict(_ result: Result<RESTConfiguration, RESTConfigurationError>) -> String {
    switch result {
    case .success(let configuration):
      return "accepted: \(configuration.environments.map(\.0)) \(configuration.kinds.keys.sorted())"
    case .failure(let error): return "refused: \(error)"
    }
  }

  private static func fromBytes(_ bytes: [UInt8]) -> String {
    verdict(
      bytes.withUnsafeBytes { bytes in
        Result { () throws(RESTConfigurationError) in try RESTConfiguration.parse(utf8: bytes) }
      })
  }

  private static func fromString(_ bytes: [UInt8]) -> String {
    verdict(
      Result { () throws(RESTConfigurationError) in try RESTConfiguration.parse(String(decoding: bytes, as: UTF8.self))
      })
  }

  @Test func bytesReadAsTheirDecodedText() {
    let valid = Array(artsyLikeConfiguration.utf8)
    let description = Array(#""$schema": "../schema/backend.schema.json","#.utf8)
    let at = valid.firstRange(of: description)!.upperBound
    var cases: [[UInt8]] = [valid, [], Array("{".utf8), Array("é".utf8)]
    // Invalid UTF-8 in a description (repaired to U+FFFD: still accepted), in a key,
    // outside strings, cut short at the end.
    for bad: [UInt8] in [[0xFF], [0xC3], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
      cases.append(valid[..<at] + Array(#""description": "x"#.utf8) + bad + Array(#"y","#.utf8) + valid[at...])
      cases.append(valid[..<at] + Array(#"""#.utf8) + bad + Array(#"": 1,"#.utf8) + valid[at...])
      cases.append(valid[..<at] + bad + valid[at...])
      cases.append(valid + bad)
    }
    for bytes in cases {
      #expect(Self.fromBytes(bytes) == Self.fromString(bytes))
    }
    // The first invalid case is accepted only because it is repaired.
    #expect(Self.fromBytes(cases[4]).hasPrefix("accepted"))
  }
}
