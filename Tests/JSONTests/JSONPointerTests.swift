import JSON
import Testing

@Suite struct JSONPointerTests {
  /// Every path the server writes goes back to the name it escaped: a `~` or `/`
  /// followed by a combining mark is one Character but still a `~` or `/` scalar,
  /// and an escaper that compared Characters left it bare, a pointer that does not
  /// parse (`~\u{301}`) or names two tokens (`/\u{301}`).
  @Test(arguments: ["plain", "a/b", "a~b", "~1", "/", "~", "~\u{301}x", "a/\u{301}b", "caf\u{E9}", ""])
  func aTokenReadsBackAsItsName(name: String) throws {
    let path = JSONPointer.member(name, of: "/params")
    let pointer = try #require(JSONPointer(path))
    #expect(pointer.tokens.count == 2)
    #expect(pointer.tokens.last.map { Array($0.utf8) } == Array(name.utf8))
  }

  @Test func aNameWithoutTildeOrSlashIsItsOwnToken() {
    #expect(JSONPointer.token("gene") == "gene")
    #expect(JSONPointer.token("a~/b") == "a~0~1b")
  }
}
