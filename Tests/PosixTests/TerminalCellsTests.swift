import Posix
import Testing

/// Terminal cells, as glibc's C.UTF-8 `wcwidth` and the terminals on this system count them.
struct TerminalCellsTests {
  @Test(arguments: [
    ("a", 1), ("編", 2), ("e\u{301}", 1), ("🎨", 2), ("❤\u{FE0F}", 2), ("Ｆ", 2), ("\u{200B}", 0),
  ])
  func aCharactersWidth(text: String, cells: Int) {
    #expect(TerminalCells.width(of: Character(text)) == cells)
  }

  @Test func aPrefixNeverCutsAWideCharacterInHalf() {
    #expect(TerminalCells.prefix("編集者です", cells: 5) == "編集")
    #expect(TerminalCells.prefix("ab編", cells: 3) == "ab")
    #expect(TerminalCells.padded("編集", to: 6) == "編集  ")
    #expect(TerminalCells.width(of: "café 編") == 7)
  }
}
