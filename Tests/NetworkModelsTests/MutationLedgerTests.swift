import EventLoop
import NetworkModels
import Posix
import Testing

private let kaws = EntityKey(kind: "artist", id: "kaws")

/// A store whose events go to a ledger in `folder` (memory only without one).
private final class LedgerFixture {
  let fixture: StoreFixture
  let ledger: MutationLedger
  var pushed: [MutationEntry] = []
  var store: FollowStore { fixture.store }
  var backend: ScriptedBackend { fixture.backend }

  init(folder: StateFolder? = nil, maxEntries: Int = 100, maxBytes: Int = 1 << 20) throws {
    fixture = try StoreFixture()
    ledger =
      try folder.map { try MutationLedger(folder: $0, maxEntries: maxEntries, maxBytes: maxBytes) }
      ?? MutationLedger(maxEntries: maxEntries, maxBytes: maxBytes)
    var clock: Int64 = 1_764_690_000_000
    ledger.now = {
      clock += 1
      return clock
    }
    fixture.store.onMutation = { [unowned ledger] in ledger.note($0, $1) }
    ledger.onOutcome = { [unowned self] in self.pushed.append($0) }
  }

  var outcomes: [String] { ledger.page(since: nil, limit: 1000, kind: nil, id: nil).entries.map(Self.describe) }

  static func describe(_ entry: MutationEntry) -> String {
    "\(entry.seq) \(entry.key.id) \(entry.intent) \(entry.outcome.rawValue) \(entry.attempts)"
  }
}

@Suite struct MutationLedgerTests {
  @Test func aConfirmedFollowIsOneEntryWithItsAttempts() throws {
    let f = try LedgerFixture()
    f.ledger.client = "nvim"
    f.store.setFollowing(artist, true)
    f.ledger.client = nil
    #expect(f.outcomes == ["1 banksy true pending 1"])
    f.backend.succeed()
    #expect(f.outcomes == ["1 banksy true confirmed 1"])
    let entry = try #require(f.pushed.last)
    #expect(entry.client == "nvim" && entry.settledAtMs != nil && entry.failure == nil)
    // A follow of what the backend has is no new intent.
    f.store.setFollowing(artist, true)
    #expect(f.ledger.count == 1 && f.pushed.count == 1)
  }

  @Test func aRefusalIsTold() throws {
    let f = try LedgerFixture()
    f.store.setFollowing(artist, true)
    f.backend.fail(0, FollowFailure(.rejected(status: 422), "no"))
    #expect(f.outcomes == ["1 banksy true refused 1"])
    #expect(f.pushed.map(\.failure) == [FollowFailure(.rejected(status: 422), "no")])
  }

  @Test func retriesRunOutInARollback() throws {
    let f = try LedgerFixture()
    f.store.setFollowing(kaws, true)
    // The fixture's policy: 3 retries.
    for attempt in 0...3 {
      f.backend.fail(0, FollowFailure(.unavailable, "down"))
      if attempt < 3 { try f.fixture.advance(ms: 2000) }
    }
    #expect(f.outcomes == ["1 kaws true rolledBack 4"])
    #expect(f.pushed.map(\.failure?.message) == ["down"])
  }

  @Test func aNewerIntentSupersedesTheOpenOne() throws {
    let f = try LedgerFixture()
    f.store.setFollowing(artist, true)
    f.store.setFollowing(artist, false)
    #expect(f.outcomes == ["1 banksy true superseded 1", "2 banksy false pending 0"])
    f.backend.succeed()
    // The follow was done; the unfollow is owed.
    f.backend.succeed()
    #expect(f.outcomes == ["1 banksy true superseded 1", "2 banksy false confirmed 1"])
    #expect(f.pushed.map(\.outcome) == [.superseded, .confirmed])
  }

  @Test func waitingForCredentialsThenConfirmed() throws {
    let f = try LedgerFixture()
    f.store.setFollowing(artist, true)
    f.backend.fail(0, FollowFailure(.unauthorized(status: 401), "sign in"))
    #expect(f.outcomes == ["1 banksy true waiting 1"])
    f.store.credentialsChanged()
    f.backend.succeed()
    #expect(f.outcomes == ["1 banksy true confirmed 2"])
    #expect(f.pushed.map(\.outcome) == [.waiting, .confirmed])
  }

  @Test func theBoundsDropTheOldestAndPagesSayTruncated() throws {
    let f = try LedgerFixture(maxEntries: 3)
    for index in 0..<5 {
      f.store.setFollowing(EntityKey(kind: "artist", id: "a\(index)"), true)
      f.backend.succeed()
    }
    #expect(f.outcomes.map { $0.split(separator: " ")[0] } == ["3", "4", "5"])
    #expect(f.ledger.page(since: 0, limit: 10, kind: nil, id: nil).truncated)
    #expect(!f.ledger.page(since: 2, limit: 10, kind: nil, id: nil).truncated)
    let page = f.ledger.page(since: 2, limit: 2, kind: nil, id: nil)
    #expect(page.entries.map(\.seq) == [3, 4] && page.more && page.next == 4 && page.last == 5)
    f.ledger.maxBytes = f.ledger.bytes - 1
    #expect(f.ledger.count == 2)
  }

  @Test func theFileReadsBackEveryEntryAndSeqGoesOn() throws {
    let temp = try LocalBackendTestFolder()
    do {
      let f = try LedgerFixture(folder: temp.folder)
      f.ledger.client = "emacs"
      f.store.setFollowing(artist, true)
      f.backend.fail(0, FollowFailure(.rejected(status: 404), "gone \u{1F600} \"quoted\""))
      f.store.setFollowing(kaws, false)
      f.ledger.commit()
    }
    let again = try MutationLedger(folder: temp.folder)
    let entries = again.page(since: nil, limit: 10, kind: nil, id: nil).entries
    // Calls are counted in memory: a pending entry's line was written before its call.
    #expect(entries.map(LedgerFixture.describe) == ["1 banksy true refused 1", "2 kaws false pending 0"])
    #expect(entries[0].failure == FollowFailure(.rejected(status: 404), "gone \u{1F600} \"quoted\""))
    #expect(entries[0].client == "emacs" && again.nextSeq == 3)
    // A compaction keeps the next seq even when every entry is dropped.
    again.maxEntries = 1
    again.maxBytes = 1
    #expect(again.count == 0)
    again.compactIfNeeded()
    #expect(try MutationLedger(folder: temp.folder).nextSeq == 3)
  }

  @Test func eachOutcomesLiteralIsItsName() {
    for outcome in MutationOutcome.allCases { #expect(outcome.literal.description == outcome.rawValue) }
  }

  @Test func hostileLinesAreNotRead() throws {
    let temp = try LocalBackendTestFolder()
    let lines = [
      #"{"q":1,"k":"artist","i":"ok","w":true,"a":5,"o":"confirmed","t":6}"#,
      #"{"q":0,"k":"artist","i":"zero","w":true,"a":5,"o":"confirmed"}"#,
      #"{"q":2,"k":"Bad Kind","i":"x","w":true,"a":5,"o":"confirmed"}"#,
      #"{"q":3,"k":"artist","i":"x","w":"yes","a":5,"o":"confirmed"}"#,
      #"{"q":4,"k":"artist","i":"x","w":true,"a":-1,"o":"confirmed"}"#,
      #"{"q":5,"k":"artist","i":"x","w":true,"a":5,"o":"confirmed","x":"rejected","xm":"no status"}"#,
      #"{"q":9007199254740993,"k":"artist","i":"x","w":true,"a":5,"o":"confirmed"}"#,
      #"{"next":-4}"#,
    ]
    try temp.write(MutationLedger.fileName, lines.joined(separator: "\n") + "\n")
    let ledger = try MutationLedger(folder: temp.folder)
    #expect(ledger.page(since: nil, limit: 10, kind: nil, id: nil).entries.map(\.key.id) == ["ok"])
    #expect(ledger.nextSeq == 2)
    #expect(try temp.names().contains("\(MutationLedger.fileName).invalid-1"))
  }
}
