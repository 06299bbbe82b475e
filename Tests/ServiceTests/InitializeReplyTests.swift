import JSON
import JSONRPC
import Testing

@testable import Service

/// `initialize`'s result is written as text (`Initialize.Result`); these hold it to the
/// bytes of the jansson tree it replaced, escapes included.
struct InitializeReplyTests {
  /// The reply as it was built before: a tree, dumped compact.
  func treeBytes(instance: String, methods: [String]) -> [UInt8] {
    let list = JSON.array()
    for method in methods { list.append(.string(method)) }
    return JSON.object()
      .set(
        "serverInfo",
        JSON.object().set("name", .string("netmodel")).set("version", .string(netmodelVersion))
          .set("instance", .string(instance))
      )
      .set("protocolVersion", .string(protocolVersion))
      .set("capabilities", JSON.object().set("methods", list))
      .encoded()
  }

  func textBytes(instance: String, methods: [String]) -> [UInt8] {
    var buffer: [UInt8] = []
    Initialize.Result(instance: instance, methods: methods).encode(into: &buffer)
    return buffer
  }

  @Test(arguments: [
    "0123456789abcdef", "", "quote\" backslash\\ slash/", "\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}", "é ∀ 🙂",
  ])
  func sameBytesAsTheTree(instance: String) {
    let methods = ["$/cancelRequest", "exit", "initialize", "rpc.discover", "odd\"\u{2}name"]
    #expect(textBytes(instance: instance, methods: methods) == treeBytes(instance: instance, methods: methods))
    #expect(textBytes(instance: instance, methods: []) == treeBytes(instance: instance, methods: []))
  }

  @Test func theServiceWritesTheTreesBytes() throws {
    let fixture = try ServiceFixture()
    try fixture.peer.send(#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#)
    let wire = try fixture.peer.rawOutput()
    let methods = fixture.service.server.dispatcher.methods
    #expect(methods.count > 10)
    let expected =
      Array(#"{"jsonrpc":"2.0","id":7,"result":"#.utf8)
      + treeBytes(instance: fixture.service.instance, methods: methods) + Array("}\n".utf8)
    #expect(String(decoding: wire, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
  }
}
