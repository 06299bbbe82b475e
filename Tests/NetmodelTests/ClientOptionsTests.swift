import Testing

@testable import netmodel

/// The options of `call`, `watch` and `top` anywhere among the operands (issue 25
/// item 12); what a command does not take is a usage error, not an operand.
@Suite struct ClientOptionsTests {
  func parse(_ arguments: [String], accepted: Set<ClientOptions.Option>) throws -> ClientOptions {
    try ClientOptions(arguments[...], command: "test", accepted: accepted)
  }

  @Test func optionsComeAnywhereAndOperandsKeepTheirOrder() throws {
    let options = try parse(
      ["follow", "--timeout", "50", "kind=a", "--socket=/s", "id=b"], accepted: [.socket, .timeout])
    #expect(options.operands == ["follow", "kind=a", "id=b"])
    #expect(options.socket == "/s" && options.timeout == 50)
    let top = try parse(["--json", "--socket", "/t"], accepted: [.socket, .json])
    #expect(top.json && top.socket == "/t" && top.operands.isEmpty)
  }

  @Test func afterADoubleDashEverythingIsAnOperand() throws {
    let options = try parse(["--socket=/s", "--", "m", "--socket=/x", "--json"], accepted: [.socket])
    #expect(options.socket == "/s" && options.operands == ["m", "--socket=/x", "--json"])
  }

  @Test func anOptionTheCommandDoesNotTakeOrAMissingValueIsRefused() {
    #expect(throws: ClientOptions.UsageError.self) { try parse(["--json"], accepted: [.socket]) }
    #expect(throws: ClientOptions.UsageError.self) { try parse(["--bogus", "m"], accepted: [.socket]) }
    #expect(throws: ClientOptions.UsageError.self) { try parse(["m", "--socket"], accepted: [.socket]) }
    #expect(throws: ClientOptions.UsageError.self) { try parse(["--timeout=0"], accepted: [.timeout]) }
    #expect(throws: ClientOptions.UsageError.self) { try parse(["--json=1"], accepted: [.json]) }
    #expect(throws: ClientOptions.UsageError.self) { try parse(["--count=0"], accepted: [.count]) }
    #expect(throws: ClientOptions.UsageError.self) { try parse(["--until=a=1"], accepted: [.count]) }
  }

  @Test func watchTakesACountAndSeveralUntilTests() throws {
    let options = try parse(
      ["entity", "--until", "following=true", "--count=3", "--until=id=a=b"], accepted: [.count, .until])
    #expect(options.count == 3 && options.until == ["following=true", "id=a=b"] && options.operands == ["entity"])
  }
}
