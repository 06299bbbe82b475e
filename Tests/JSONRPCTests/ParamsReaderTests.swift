import JSON
import Testing

@testable import JSONRPC

/// A request's params read from the envelope scan answer as the same params read from
/// a jansson tree: present and absent members, whatever their keys (short, escaped,
/// longer than a packed word, alike in their first bytes).
@Suite struct ParamsReaderTests {
  static let keys = [
    "kind", "id", "refresh", "maxAgeMs", "a", "b", "ab", "ba", "kinds", "kin", "idx", "", "é",
    "a-key-longer-than-sixteen-bytes", "a-key-longer-than-sixteen-bytez", "\u{1}k", "k\u{1F600}",
  ]

  /// `key` as a JSON string, its `a`s written `\u0061` when asked (a key that is
  /// spilled, not packed, while scanning).
  static func quoted(_ key: String, escapingA: Bool) -> String {
    var bytes: [UInt8] = []
    appendJSONString(key, to: &bytes)
    let text = String(decoding: bytes, as: UTF8.self)
    return escapingA ? String(text.flatMap { $0 == "a" ? Array(#"\u0061"#) : [$0] }) : text
  }

  /// Every subset of up to three keys as params (escaped in some messages), each key
  /// then read from both readers.
  @Test func scannedParamsReadAsTheirTree() throws {
    let workspace = JSONScanner.Workspace()
    for (first, a) in Self.keys.enumerated() {
      for (second, b) in Self.keys.enumerated() where second > first {
        for c in Self.keys.suffix(4) where c != a && c != b {
          for escaped in [false, true] {
            let members = [a, b, c].enumerated().map { index, key in
              "\(Self.quoted(key, escapingA: escaped && index == 1)):\(index)"
            }
            let text = #"{"jsonrpc":"2.0","id":1,"method":"m","params":{"# + members.joined(separator: ",") + "}}"
            let bytes = Array(text.utf8)
            let tree = try #require(try JSON.parse(bytes)["params"])
            let expected = ParamsReader(tree)
            try bytes.withUnsafeBytes { raw in
              let envelope = try #require(try JSONScanner.scanEnvelope(raw, reusing: workspace))
              let message = IncomingMessage(envelope: envelope, in: raw)
              guard case .request(_, _, let scanned) = consume message else {
                Issue.record("not a request: \(text)")
                return
              }
              for key in Self.keys {
                let name = JSONScanner.Key(key)
                #expect(scanned.contains(name) == expected.contains(name), "\(key) in \(text)")
                #expect(
                  (try? scanned.integer(name)) == (try? expected.integer(name)), "\(key) in \(text)")
              }
            }
          }
        }
      }
    }
  }

  #if DEBUG
    /// The envelope is refilled for each message: a reader kept past its own (which its
    /// being non-copyable and lent makes hard to write) is caught in debug builds
    /// rather than reading the next message's params.
    @Test func aReaderReadAfterItsMessageStopsADebugBuild() async {
      await #expect(processExitsWith: .failure) {
        let workspace = JSONScanner.Workspace()
        let first = Array(#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}"#.utf8)
        let second = Array(#"{"jsonrpc":"2.0","id":2,"method":"m","params":{"a":2}}"#.utf8)
        try first.withUnsafeBytes { raw in
          let envelope = try #require(try JSONScanner.scanEnvelope(raw, reusing: workspace))
          let message = IncomingMessage(envelope: envelope, in: raw)
          guard case .request(_, _, let reader) = consume message else { return }
          #expect(try reader.integer(JSONScanner.Key("a")) == 1)
          try second.withUnsafeBytes { raw in _ = try JSONScanner.scanEnvelope(raw, reusing: workspace) }
          _ = try reader.integer(JSONScanner.Key("a"))
        }
      }
    }
  #endif
}
