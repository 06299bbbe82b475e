import JSON
import JSONRPC
import Testing

@Suite struct MessageEncoderTests {
  func text(_ encode: (inout [UInt8]) -> Void) -> String {
    var bytes: [UInt8] = []
    encode(&bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  @Test func everyEnvelopeIsJSONRPC2() throws {
    #expect(
      text { MessageEncoder.result(id: .integer(7), into: &$0) { $0.append(contentsOf: Array("true".utf8)) } }
        == #"{"jsonrpc":"2.0","id":7,"result":true}"#)
    #expect(
      text { MessageEncoder.error(id: nil, .invalidRequest("no"), into: &$0) }
        == #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}"#)
    #expect(
      text { MessageEncoder.request(id: .string("a"), method: "stats", params: nil, into: &$0) }
        == #"{"jsonrpc":"2.0","id":"a","method":"stats"}"#)
    #expect(
      text { MessageEncoder.request(id: .integer(1), method: "m", params: JSON.object(), into: &$0) }
        == #"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#)
    let notification = MessageEncoder.Notification(method: "state\"Changed")
    #expect(
      text { notification.encode(into: &$0) { $0.append(contentsOf: Array("[1]".utf8)) } }
        == #"{"jsonrpc":"2.0","method":"state\"Changed","params":[1]}"#)
  }
}

/// A request id is its bytes: two spellings are two requests (`ExactString`).
@Suite struct RequestIDBytesTests {
  @Test func equivalentStringIDsAreTwoIDs() {
    let ids: [RequestID] = [.string("caf\u{E9}"), .string("cafe\u{301}"), .string("K"), .string("\u{212A}")]
    #expect(Set(ids).count == 4)
    #expect(RequestID.string("caf\u{E9}") == .string(String(decoding: Array("caf\u{E9}".utf8), as: UTF8.self)))
    #expect(RequestID.integer(1) != .string("1") && RequestID.real(1) != .integer(1))
  }
}
