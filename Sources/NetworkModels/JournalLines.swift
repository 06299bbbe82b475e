import JSON
import Posix

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

  /// Calls `read` with each complete, non-blank line and its line number in the file
  /// (from 1, blank lines counted, as an editor shows it) in file order; `read`
  /// answers whether the line could be read.
  init(_ bytes: [UInt8], read: (_ line: ArraySlice<UInt8>, _ number: Int) -> Bool) {
    var start = 0
    var lastWasBad = false
    var number = 0
    while start < bytes.count {
      number += 1
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
      lastWasBad = !read(bytes[start..<newline], number)
      if lastWasBad { skipped += 1 }
    }
    // An unreadable last line is a torn write too, not something to warn about.
    if lastWasBad {
      skipped -= 1
      tornTail = true
    }
  }
}

/// How a part took one line of the journal read at start.
public enum ReplayOutcome: Equatable {
  case replayed
  /// Not this part's line (another part's, or another backend's): left for the others.
  case notThisPart
  /// This part's line, but one a request could not have made (an id longer than 256
  /// bytes, a kind outside the pattern, a field of the wrong type): never replayed.
  case invalid(String)
}

/// A line of a state file that is not replayed, and why.
struct InvalidLine {
  var number: Int
  var bytes: [UInt8]
  var reason: String
}

/// The checks every record of an entity passes before it is replayed: the same as a
/// request's (`EntityKey.problem`).
enum JournalRecord {
  static func key(_ object: JSONScanner.ScannedObject) -> Result<EntityKey, RecordProblem> {
    guard let kind = object["k"]?.stringValue else { return .failure(RecordProblem("no \"k\" string")) }
    guard let id = object["i"]?.stringValue else { return .failure(RecordProblem("no \"i\" string")) }
    if let problem = EntityKey.problem(kind: kind, id: id) { return .failure(RecordProblem(problem.reason)) }
    return .success(EntityKey(kind: kind, id: id))
  }
}

struct RecordProblem: Error {
  let reason: String
  init(_ reason: String) { self.reason = reason }
}

extension StateFolder {
  /// The first free `<name>.invalid-<n>` (n ≥ 1), for `setAside(_:of:as:)`.
  func nameForInvalidLines(of name: String) -> String {
    var n = 1
    while exists("\(name).invalid-\(n)") { n += 1 }
    return "\(name).invalid-\(n)"
  }

  /// Keeps `invalid`, lines of `name` that are not replayed, in `aside` (all of them:
  /// the file is replaced) for a human to look at, and says so, naming each line of
  /// `announced` (the lines not yet told of). Returns false when they could not be
  /// written there.
  func setAside(
    _ invalid: [InvalidLine], of name: String, as aside: String, announcing announced: ArraySlice<InvalidLine>
  )
    -> Bool
  {
    var bytes: [UInt8] = []
    for line in invalid {
      bytes += line.bytes
      bytes.append(UInt8(ascii: "\n"))
    }
    var kept = true
    var fate = "kept in \(file(aside))"
    do {
      try replace(aside, with: bytes)
    } catch {
      kept = false
      fate = "could not be kept aside (\(error))"
    }
    let shown = 10
    for line in announced.prefix(shown) {
      Log.warn("\(file(name)) line \(line.number): \(line.reason); not replayed, \(fate)")
    }
    if announced.count > shown {
      Log.warn("\(file(name)): \(announced.count - shown) more line(s) not replayed, \(fate)")
    }
    return kept
  }

  /// The same for lines read all at once, into a new file.
  func setAside(_ invalid: [InvalidLine], of name: String) -> Bool {
    guard !invalid.isEmpty else { return true }
    return setAside(invalid, of: name, as: nameForInvalidLines(of: name), announcing: invalid[...])
  }
}
