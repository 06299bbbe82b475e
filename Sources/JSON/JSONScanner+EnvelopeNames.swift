// generated from schema/openrpc.json by scripts/gen-protocol; do not edit
extension JSONScanner {
  /// The envelope's member names, packed at compile time: each member's name is compared
  /// with up to six of these, and a `static let` that code makes is checked for
  /// initialisation at every use. `StackTextTests` checks each against `Key(name)`.
  enum EnvelopeName {
    static let id = Key(name: "id", low: 0x6469, count: 2)
    static let jsonrpc = Key(name: "jsonrpc", low: 0x0063_7072_6E6F_736A, count: 7)
    static let method = Key(name: "method", low: 0x646F_6874_656D, count: 6)
    static let params = Key(name: "params", low: 0x736D_6172_6170, count: 6)
    static let result = Key(name: "result", low: 0x746C_7573_6572, count: 6)
    static let error = Key(name: "error", low: 0x0072_6F72_7265, count: 5)
    /// The one value `jsonrpc` may have.
    static let version = Key(name: "2.0", low: 0x0030_2E32, count: 3)
    static let all = [id, jsonrpc, method, params, result, error, version]
  }
}
