import EventLoop
import NetworkModels
import Posix
import Testing

private func key(_ id: String, kind: String = "artist") -> EntityKey { EntityKey(kind: kind, id: id) }

private func line(_ id: String, _ wanted: Bool?, kind: String = "artist") -> String {
  let w = wanted.map { $0 ? "true" : "false" } ?? "null"
  return #"{"k":"\#(kind)","i":"\#(id)","w":\#(w)}"# + "\n"
}

/// (kind/id, wanted) pairs, easy to compare.
private func pairs(_ intents: [(EntityKey, Bool)]) -> [String] {
  intents.map { "\($0.0)=\($0.1)" }
}

@Suite struct OutboxTests {
  @Test func recordsWaitInMemoryAndOneCommitWritesThemAll() throws {
    let temp = try LocalBackendTestFolder()
    let outbox = try Outbox(folder: temp.folder)
    #expect(try temp.text(Journal.fileName) == "")
    #expect(!outbox.needsCommit)

    outbox.record(key("a"), wanted: true)
    outbox.record(key("b"), wanted: false)
    outbox.record(key("c"), wanted: true)
    outbox.record(key("a"), wanted: nil)
    outbox.record(key("x", kind: "venue"), wanted: true)
    #expect(outbox.needsCommit)
    #expect(outbox.count == 3)
    // Nothing reached the file yet.
    #expect(try temp.text(Journal.fileName) == "")

    #expect(outbox.commit())
    #expect(!outbox.needsCommit)
    #expect(outbox.commitCount == 1)
    #expect(
      try temp.text(Journal.fileName)
        == line("a", true) + line("b", false) + line("c", true) + line("a", nil) + line("x", true, kind: "venue"))
    #expect(outbox.lineCount == 5)

    // A commit with nothing recorded writes nothing.
    #expect(outbox.commit())
    #expect(outbox.commitCount == 1)

    outbox.record(key("b"), wanted: nil)
    outbox.commit()
    #expect(outbox.commitCount == 2)
    #expect(try temp.text(Journal.fileName)?.hasSuffix(line("x", true, kind: "venue") + line("b", nil)) == true)
    #expect(pairs(outbox.unsettledIntents()) == ["artist/c=true", "venue/x=true"])
  }

  @Test func recordsThatChangeNothingAreNotWritten() throws {
    let temp = try LocalBackendTestFolder()
    let outbox = try Outbox(folder: temp.folder)
    outbox.record(key("a"), wanted: true)
    outbox.record(key("a"), wanted: true)
    outbox.record(key("never"), wanted: nil)
    outbox.commit()
    #expect(try temp.text(Journal.fileName) == line("a", true))
  }

  @Test func unsettledIntentsSurviveARestartInOrder() throws {
    let temp = try LocalBackendTestFolder()
    do {
      let outbox = try Outbox(folder: temp.folder)
      outbox.record(key("z"), wanted: true)
      outbox.record(key("y"), wanted: false)
      outbox.record(key("x"), wanted: true)
      outbox.record(key("y"), wanted: true)
      outbox.record(key("x"), wanted: nil)
      outbox.commit()
      // Recorded but never committed: not durable, so not replayed.
      outbox.record(key("lost"), wanted: true)
    }
    let outbox = try Outbox(folder: temp.folder)
    #expect(pairs(outbox.unsettledIntents()) == ["artist/z=true", "artist/y=true"])
    #expect(outbox.count == 2)
  }

  @Test func replayKeepsTheLastLinePerKeyDropsSettledAndIgnoresATornLastLine() throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(
      Journal.fileName,
      line("a", true) + line("b", true) + line("c", false) + line("a", false) + line("b", nil)
        + line("d", true, kind: "venue") + line("c", nil) + line("c", true) + #"{"k":"artist","i":"e","w":tr"#)
    let outbox = try Outbox(folder: temp.folder)
    #expect(pairs(outbox.unsettledIntents()) == ["artist/a=false", "venue/d=true", "artist/c=true"])
    #expect(outbox.count == 3)
    #expect(outbox.compactionCount == 0)

    // The first commit rewrites the file: one line per live intent, the torn tail gone.
    outbox.record(key("f"), wanted: true)
    outbox.commit()
    #expect(outbox.compactionCount == 1)
    #expect(
      try temp.text(Journal.fileName)
        == line("a", false) + line("d", true, kind: "venue") + line("c", true) + line("f", true))
    #expect(try temp.names() == [Journal.fileName])
    let reopened = try Outbox(folder: temp.folder)
    #expect(pairs(reopened.unsettledIntents()) == ["artist/a=false", "venue/d=true", "artist/c=true", "artist/f=true"])
  }

  @Test(arguments: [
    // A complete record that lost only its newline was never committed.
    #"{"k":"artist","i":"e","w":true}"#,
    // A line with its newline whose content is not a record.
    #"{"k":"artist","i":"e","# + "\n",
    "\u{0}\u{0}\u{0}\n",
  ])
  func aTornLastLineIsIgnored(tail: String) throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(Journal.fileName, line("a", true) + tail)
    let outbox = try Outbox(folder: temp.folder)
    #expect(pairs(outbox.unsettledIntents()) == ["artist/a=true"])
    outbox.record(key("b"), wanted: true)
    outbox.commit()
    #expect(try temp.text(Journal.fileName) == line("a", true) + line("b", true))
  }

  @Test func unreadableLinesInTheMiddleAreSkipped() throws {
    let temp = try LocalBackendTestFolder()
    try temp.write(
      Journal.fileName,
      line("a", true) + "garbage\n" + #"{"k":"artist","i":"b","w":"yes"}"# + "\n" + #"{"k":1,"i":"c","w":true}"#
        + "\n\n" + line("d", true))
    let outbox = try Outbox(folder: temp.folder)
    #expect(pairs(outbox.unsettledIntents()) == ["artist/a=true", "artist/d=true"])
  }

  @Test func aCompactLogIsNotRewrittenAtStart() throws {
    let temp = try LocalBackendTestFolder()
    let content = line("a", true) + line("b", false)
    try temp.write(Journal.fileName, content)
    let outbox = try Outbox(folder: temp.folder)
    #expect(outbox.compactionCount == 0)
    #expect(outbox.lineCount == 2)
    #expect(try temp.text(Journal.fileName) == content)
  }

  @Test func theLogIsCompactedWhenItOutgrowsItsLiveEntries() throws {
    let temp = try LocalBackendTestFolder()
    let outbox = try Outbox(folder: temp.folder)
    outbox.record(key("keep"), wanted: true)
    // 999 more lines: 1000 in all, not more than max(1000, 2 × 2).
    for i in 0..<999 { outbox.record(key("toggle"), wanted: i % 2 == 0 ? true : nil) }
    outbox.commit()
    #expect(outbox.lineCount == 1000)
    #expect(outbox.compactionCount == 0)
    #expect(outbox.count == 2)

    // One more line crosses the threshold: the commit compacts.
    outbox.record(key("toggle"), wanted: false)
    outbox.commit()
    #expect(outbox.compactionCount == 1)
    #expect(outbox.lineCount == 2)
    #expect(try temp.text(Journal.fileName) == line("keep", true) + line("toggle", false))
    #expect(try temp.names() == [Journal.fileName])

    // Appending goes on in the new file.
    outbox.record(key("new"), wanted: true)
    outbox.commit()
    #expect(try temp.text(Journal.fileName) == line("keep", true) + line("toggle", false) + line("new", true))
  }

  @Test func theCompactionThresholdGrowsWithTheLiveEntries() throws {
    let temp = try LocalBackendTestFolder()
    let outbox = try Outbox(folder: temp.folder)
    for i in 0..<600 { outbox.record(key("k\(i)"), wanted: true) }
    // 600 live entries: the threshold is 1200 lines.
    for i in 0..<599 { outbox.record(key("k\(i)"), wanted: false) }
    outbox.commit()
    #expect(outbox.lineCount == 1199)
    #expect(outbox.compactionCount == 0)
    outbox.record(key("k0"), wanted: nil)
    outbox.record(key("k1"), wanted: nil)
    outbox.commit()
    // 1201 lines > max(1000, 2 × 598).
    #expect(outbox.compactionCount == 1)
    #expect(outbox.lineCount == 598)
  }

  @Test func idsThatNeedEscapingRoundTrip() throws {
    let temp = try LocalBackendTestFolder()
    let odd = ["quote\"d", "back\\slash", "new\nline", "tab\t", "ünïcødé 🎵", "{\"k\":\"x\"}"]
    do {
      let outbox = try Outbox(folder: temp.folder)
      for id in odd { outbox.record(key(id), wanted: true) }
      outbox.commit()
      // One line per record, whatever the id holds.
      #expect(try temp.text(Journal.fileName)?.split(separator: "\n").count == odd.count)
    }
    let outbox = try Outbox(folder: temp.folder)
    #expect(outbox.unsettledIntents().map { $0.0.id } == odd)
  }

  @Test func explicitCompactionAlsoMakesBufferedRecordsDurable() throws {
    let temp = try LocalBackendTestFolder()
    let outbox = try Outbox(folder: temp.folder)
    outbox.record(key("a"), wanted: true)
    outbox.commit()
    outbox.record(key("a"), wanted: nil)
    outbox.record(key("b"), wanted: true)
    try outbox.compact()
    #expect(!outbox.needsCommit)
    #expect(try temp.text(Journal.fileName) == line("b", true))
  }
  @Test func intentsAreListedForTheirEnvironmentAndKeptForTheOthers() throws {
    let temp = try LocalBackendTestFolder()
    // Untagged lines (an older log) belong to the environment of the start.
    try temp.write(
      Journal.fileName,
      line("old", true) + #"{"k":"artist","i":"p","e":"production","w":true}"# + "\n")
    do {
      let outbox = try Outbox(folder: temp.folder, environment: "staging")
      #expect(pairs(outbox.unsettledIntents()) == ["artist/old=true"])
      outbox.record(key("s"), wanted: false)
      outbox.switchEnvironment(to: "production")
      #expect(pairs(outbox.unsettledIntents()) == ["artist/p=true"])
      outbox.record(key("s"), wanted: true)
      outbox.commit()
      #expect(outbox.count == 4)
    }
    let outbox = try Outbox(folder: temp.folder, environment: "production")
    #expect(pairs(outbox.unsettledIntents()) == ["artist/p=true", "artist/s=true"])
    outbox.switchEnvironment(to: "staging")
    #expect(pairs(outbox.unsettledIntents()) == ["artist/old=true", "artist/s=false"])
  }
}
