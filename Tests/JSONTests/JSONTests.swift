import JSON
import Testing

@Suite struct JSONTests {
  @Test func parseErrorsCarryTheirPosition() {
    do {
      _ = try JSON.parse("{\"a\": 1,\n  \"b\": }")
      Issue.record("expected a parse error")
    } catch {
      #expect(error.line == 2)
      #expect(error.column == 8)
      #expect(error.position > 0)
    }
  }

  @Test func integersStayIntegersAndRealsStayReals() throws {
    let value = try JSON.parse(#"{"i": 9223372036854775807, "n": -9223372036854775808, "r": 1.5}"#)
    #expect(value["i"]?.integer == Int64.max)
    #expect(value["n"]?.integer == Int64.min)
    #expect(value["r"]?.real == 1.5)
    #expect(value["r"]?.integer == nil)
    #expect(value.text == #"{"i":9223372036854775807,"n":-9223372036854775808,"r":1.5}"#)
  }

  @Test func decimalEncodingCoversTheWholeRange() {
    for n: Int64 in [0, 1, -1, 10, 99, -100, Int64.max, Int64.min] {
      var buffer: [UInt8] = []
      appendDecimal(n, to: &buffer)
      #expect(String(decoding: buffer, as: UTF8.self) == String(n))
    }
  }

  @Test func stringEscapingRoundTripsThroughJansson() throws {
    let tricky = "quote \" backslash \\ newline \n tab \t nul-ish \u{01} é 🎉"
    var buffer: [UInt8] = []
    appendJSONString(tricky, to: &buffer)
    #expect(try JSON.parse(buffer).string == tricky)
    #expect(JSON.string(tricky).string == tricky)
  }

  @Test func builtObjectsKeepInsertionOrder() {
    let object = JSON.object().set("z", .integer(1)).set("a", .bool(true)).set("m", .null())
    #expect(object.text == #"{"z":1,"a":true,"m":null}"#)
    #expect(object.members.map(\.key) == ["z", "a", "m"])
  }

  @Test func emptyInputIsAnError() {
    #expect(throws: JSONError.self) { try JSON.parse("") }
  }
}
