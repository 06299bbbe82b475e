/// How the lines of an append-only file read back: the one rule for blank lines,
/// unreadable lines and a torn tail, shared by the journal and the files of earlier
/// versions it replaces.
struct JournalLines {
  /// Complete lines (ending in a newline), blank ones excluded.
  var lines = 0
  /// Complete lines before the last one that could not be read.
  var skipped = 0
  /// Whether the file ended in a line without its newline, or in an unreadable one.
  var tornTail = false

  /// Calls `read` with each complete, non-blank line and its number (from 0) in file
  /// order; `read` answers whether the line could be read.
  init(_ bytes: [UInt8], read: (_ line: ArraySlice<UInt8>, _ number: Int) -> Bool) {
    var start = 0
    var lastWasBad = false
    while start < bytes.count {
      guard let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
        // No newline: the write of this line never finished, so the commit that
        // wrote it never returned and nothing was promised from it.
        tornTail = true
        lastWasBad = false
        break
      }
      defer { start = newline + 1 }
      if newline == start { continue }
      lines += 1
      lastWasBad = !read(bytes[start..<newline], lines - 1)
      if lastWasBad { skipped += 1 }
    }
    // An unreadable last line is a torn write too, not something to warn about.
    if lastWasBad {
      skipped -= 1
      tornTail = true
    }
  }
}
