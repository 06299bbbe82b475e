import CSystem

/// How wide text is on a terminal, in cells: a CJK ideograph or an emoji takes two, a
/// combining mark none. `top` lines up its columns and cuts its lines by it (counting
/// characters put wide names out of line and past the edge). glibc's `wcwidth` is the
/// table, the one terminals on this system agree with.
public enum TerminalCells {
  public static func width(of character: Character) -> Int {
    let scalars = character.unicodeScalars
    guard let first = scalars.first else { return 0 }
    // An emoji presentation selector makes a text-style symbol wide (❤️).
    if scalars.contains("\u{FE0F}") { return 2 }
    let width = nm_cell_width(first.value)
    return width < 0 ? 1 : Int(width)
  }

  public static func width(of text: String) -> Int {
    text.reduce(0) { $0 + width(of: $1) }
  }

  /// The longest start of `text` that fits in `cells`.
  public static func prefix(_ text: String, cells: Int) -> String {
    var used = 0
    var end = text.startIndex
    for index in text.indices {
      let next = used + width(of: text[index])
      if next > cells { break }
      used = next
      end = text.index(after: index)
    }
    return String(text[..<end])
  }

  /// `text` and as many spaces after it as make it `cells` wide.
  public static func padded(_ text: String, to cells: Int) -> String {
    text + String(repeating: " ", count: max(0, cells - width(of: text)))
  }
}
