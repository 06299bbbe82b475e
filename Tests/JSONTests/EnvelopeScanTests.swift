import JSON
import TestSupport
import Testing

/// `JSONScanner.scanEnvelope`, the dispatcher's scan, gives what the general scan gives
/// (verdict, error, members): over requests as clients write them, every prefix of them
/// (an error at each position), and every byte of them replaced by a byte that matters
/// to JSON.
@Suite struct EnvelopeScanTests {
  static let messages = [
    #"{"jsonrpc":"2.0","id":1,"method":"getFollowState","params":{"kind":"artist","id":"banksy"}}"#,
    #"{"jsonrpc":"2.0","id":"a-string-id-longer-than-sixteen","method":"netmodel/ping"}"#,
    #"{ "method" : "follow" , "params" : { "kind" : "artist" , "id" : "x" } , "id" : -7 , "jsonrpc" : "2.0" }"#,
    #"{"\u0069d":2,"jsonr\u0070c":"2.0","method":"m\u00e9thode","params":[1,2]}"#,
    #"{"jsonrpc":"2.0","id":3.5,"method":"a","params":null,"extra":{"deep":[[{"x":true}]]}}"#,
    #"{"jsonrpc":"2.0","id":null,"params":{},"params":{"kind":"k","id":"i"},"method":"twice","method":"last"}"#,
    #"{"jsonrpc":"2.0","id":4,"params":{"kind":"k"},"params":"not an object","method":"m"}"#,
    #"{"jsonrpc":"2.0","id":5,"result":{"ok":true}}"#,
    #"{"jsonrpc":"2.0","id":6,"error":{"code":-1,"message":"no"}}"#,
    #"{"jsonrpc":"1.0","id":7,"method":"m","a-member-name-longer-than-sixteen-bytes":"and a long value too"}"#,
    #"{"jsonrpc":"2\u002e0","id":8,"method":"m"}"#, #"{"jsonrpc":"2.0","jsonrpc":"1.0","id":9,"method":"m"}"#,
    #"{"jsonrpc":"2.00","id":10,"method":"m"}"#, #"{"jsonrpc":2.0,"id":11,"method":"m"}"#,
    #"{}"#, #"[]"#, #"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#, #"42"#, #""text""#,
  ]

  @Test(arguments: messages)
  func agreesWithTheGeneralScan(message: String) {
    let workspace = JSONScanner.Workspace()
    var inputs: [[UInt8]] = []
    let bytes = Array(message.utf8)
    for end in 0...bytes.count { inputs.append(Array(bytes[..<end])) }
    let replacements: [UInt8] = [0x00, 0x09, 0x22, 0x2C, 0x3A, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x31, 0x80, 0xFF]
    for index in bytes.indices {
      for byte in replacements where bytes[index] != byte {
        var changed = bytes
        changed[index] = byte
        inputs.append(changed)
      }
    }
    for input in inputs {
      let problem = input.withUnsafeBytes { EnvelopeCheck.disagreement($0, workspace: workspace) }
      #expect(problem == nil, "\(String(decoding: input, as: UTF8.self)): \(problem ?? "")")
    }
  }
}
