import EventLoop
import NetworkModels
import Posix
import TestSupport
import Testing

// Crash consistency in the manner of ALICE (Pillai et al., OSDI 2014): a history of
// the outbox and the local backend is run once against a real folder while a
// recording observer (`StateFolder.observer`) notes every open, write, fsync,
// truncation, rename and folder sync. Then every state a power loss could leave is
// built in a fresh folder and recovered from:
//
// - the history cut before every operation, and inside every write at every byte;
// - of the operations before the cut, those a later fsync (of the file for content,
//   of the folder for names) made durable are kept; the others may each have reached
//   the disk or not, in any combination (which covers their reordering), and a
//   pending append may have reached it as zeros (the file grew, its data did not).
//
// Recovery must not crash, must keep every intent or follow acknowledged before the
// cut (unless asked otherwise since), and must not invent one: each recovered value
// was asked for and not answered with an error since.

/// A file system as a power loss may leave it: names → inodes, inodes → bytes.
struct CrashImage: Hashable {
  var names: [String: Int] = [:]
  var contents: [Int: [UInt8]] = [:]
}

/// One recorded change, with files named by inode as they were when it was made.
enum RecordedOperation {
  case create(inode: Int, name: String)
  case write(inode: Int, bytes: [UInt8])
  case truncate(inode: Int, size: Int)
  case sync(inode: Int)
  case rename(from: String, to: String)
  case remove(name: String)
  case syncFolder
  /// What the history's caller had been told at this point (see `Expectation`).
  case mark(Int)
  /// A call the recorder made fail (for reading a history; it changed nothing).
  case failed(String)

  var isContent: Bool {
    switch self {
    case .write, .truncate: true
    default: false
    }
  }
  var isName: Bool {
    switch self {
    case .create, .rename, .remove: true
    default: false
    }
  }
}

/// Records the changes made to a state folder; can make chosen fsyncs fail.
final class FileLayerRecorder: StateFileObserver, @unchecked Sendable {
  private(set) var operations: [RecordedOperation] = []
  private var names: [String: Int] = [:]
  private var nextInode = 0
  /// Makes an fsync or a truncation fail (EIO) while it returns true. A failed fsync
  /// makes nothing durable: what was written stays pending in the crash model (it may
  /// reach the disk or not, as after a real EIO).
  var fail: (StateFileOperation) -> Bool = { _ in false }

  func willPerform(_ operation: StateFileOperation) throws(Errno) {
    switch operation {
    case .open(let name, let create, let truncate):
      if names[name] == nil {
        guard create else { return }
        names[name] = nextInode
        operations.append(.create(inode: nextInode, name: name))
        nextInode += 1
      }
      if truncate { operations.append(.truncate(inode: names[name]!, size: 0)) }
    case .write(let name, let bytes):
      operations.append(.write(inode: names[name]!, bytes: bytes))
    case .sync(let name):
      if fail(operation) {
        operations.append(.failed("fsync \(name)"))
        throw Errno(Errno.inputOutput, call: "fsync \(name) (injected)")
      }
      operations.append(.sync(inode: names[name]!))
    case .truncate(let name, let size):
      if fail(operation) {
        operations.append(.failed("ftruncate \(name)"))
        throw Errno(Errno.inputOutput, call: "ftruncate \(name) (injected)")
      }
      operations.append(.truncate(inode: names[name]!, size: size))
    case .rename(let from, let to):
      names[to] = names[from]
      names[from] = nil
      operations.append(.rename(from: from, to: to))
    case .remove(let name):
      names[name] = nil
      operations.append(.remove(name: name))
    case .syncFolder:
      operations.append(.syncFolder)
    }
  }

  func mark(_ index: Int) { operations.append(.mark(index)) }

  /// Every distinct image a power loss during the history could leave, each with the
  /// last mark before its cut.
  func crashImages(maximumPending: Int = 10) -> [(image: CrashImage, mark: Int)] {
    // An image is checked once per mark: the same bytes may be right before an
    // acknowledgement and wrong after it.
    var seen = Set<[AnyHashable]>()
    var result: [(CrashImage, Int)] = []
    var mark = 0
    for cut in 0...operations.count {
      if cut > 0, case .mark(let m) = operations[cut - 1] { mark = m }
      // Marks with no change between them are one moment (the completions of one
      // save run one after another): an image is checked against the last of them.
      var checked = mark
      var next = cut
      while next < operations.count {
        if case .mark(let m) = operations[next] {
          checked = m
        } else if case .failed = operations[next] {
        } else {
          break
        }
        next += 1
      }
      var tails: [RecordedOperation?] = [nil]
      if cut < operations.count, case .write(let inode, let bytes) = operations[cut] {
        tails += (1..<max(bytes.count, 1)).map { .write(inode: inode, bytes: Array(bytes[..<$0])) }
      }
      let prefix = Array(operations[..<cut])
      var pending: [Int] = []
      for (i, op) in prefix.enumerated() where op.isContent || op.isName {
        if !Self.isDurable(i, in: prefix) { pending.append(i) }
      }
      for tail in tails {
        for choice in Self.choices(pending.count, maximum: maximumPending) {
          var image = CrashImage()
          var p = 0
          for (i, op) in prefix.enumerated() {
            if p < pending.count, pending[p] == i {
              let c = choice[p]
              p += 1
              if c == 0 { continue }
              if c == 2, case .write(let inode, let bytes) = op {
                Self.apply(.write(inode: inode, bytes: [UInt8](repeating: 0, count: bytes.count)), to: &image)
                continue
              }
            }
            Self.apply(op, to: &image)
          }
          if let tail { Self.apply(tail, to: &image) }
          if seen.insert([image, checked]).inserted { result.append((image, checked)) }
        }
      }
    }
    return result
  }

  /// 0: dropped, 1: applied, 2: applied as zeros (for writes; harmless otherwise).
  /// All combinations when there are few, else all-or-nothing and each one alone.
  static func choices(_ count: Int, maximum: Int) -> [[Int]] {
    if count == 0 { return [[]] }
    if count <= maximum / 2 {
      var all: [[Int]] = [[]]
      for _ in 0..<count { all = all.flatMap { c in [c + [0], c + [1], c + [2]] } }
      return all
    }
    var some = [Array(repeating: 1, count: count), Array(repeating: 0, count: count)]
    for i in 0..<count {
      for v in [0, 2] {
        var c = Array(repeating: 1, count: count)
        c[i] = v
        some.append(c)
      }
    }
    return some
  }

  static func isDurable(_ index: Int, in prefix: [RecordedOperation]) -> Bool {
    let op = prefix[index]
    for later in prefix[(index + 1)...] {
      switch (op, later) {
      case (.write(let a, _), .sync(let b)), (.truncate(let a, _), .sync(let b)):
        if a == b { return true }
      case (.create, .syncFolder), (.rename, .syncFolder), (.remove, .syncFolder):
        return true
      default: break
      }
    }
    return false
  }

  static func apply(_ op: RecordedOperation, to image: inout CrashImage) {
    switch op {
    case .create(let inode, let name):
      image.names[name] = inode
      if image.contents[inode] == nil { image.contents[inode] = [] }
    case .write(let inode, let bytes):
      image.contents[inode, default: []] += bytes
    case .truncate(let inode, let size):
      if var bytes = image.contents[inode], bytes.count > size {
        bytes.removeLast(bytes.count - size)
        image.contents[inode] = bytes
      }
    case .rename(let from, let to):
      if let inode = image.names.removeValue(forKey: from) { image.names[to] = inode }
    case .remove(let name):
      image.names[name] = nil
    case .sync, .syncFolder, .mark, .failed:
      break
    }
  }
}

/// What the caller of a history may see after recovery from a cut: per entity, the
/// values it allows (nil: no intent / not followed).
struct Expectation {
  var allowed: [EntityKey: Set<Bool?>] = [:]

  func check(_ recovered: [EntityKey: Bool], cut: String) {
    for key in Set(allowed.keys).union(recovered.keys) {
      let value = recovered[key]
      let ok = allowed[key]?.contains(value) ?? (value == nil)
      #expect(
        ok,
        "\(cut): \(key.kind)/\(key.id) recovered as \(String(describing: value)), allowed \(allowed[key].map { "\($0)" } ?? "only none")"
      )
    }
  }
}

/// Keeps the expectations of a history: asked values are allowed until an answer
/// settles them; an acknowledged value is the only one allowed until asked again. A
/// refused one is allowed until the next acknowledgement: the disk that refused it may
/// still hold it until a later write succeeds (which must undo it), but never after.
final class Ledger {
  private var confirmed: [EntityKey: Bool?] = [:]
  private var asked: [EntityKey: Set<Bool?>] = [:]
  private var doubtful: [EntityKey: Set<Bool?>] = [:]
  private var doubtSince = 0
  private(set) var marks: [Expectation] = [Expectation()]
  let recorder: FileLayerRecorder

  init(_ recorder: FileLayerRecorder) { self.recorder = recorder }

  func ask(_ key: EntityKey, _ value: Bool?) {
    asked[key, default: []].insert(value)
    snapshot("ask \(key.id) \(String(describing: value))")
  }
  func acknowledge(_ key: EntityKey, _ value: Bool?) {
    confirmed[key] = .some(value)
    asked[key] = nil
    // Doubts end with the first successful fsync after them (an answer that needed no
    // write, as for a mutation that changed nothing, ends none).
    if recorder.operations[doubtSince...].contains(where: { if case .sync = $0 { true } else { false } }) {
      doubtful.removeAll()
    }
    snapshot()
  }
  /// A restart (no crash) reads the files as they are, with the lines of a write whose
  /// fsync failed: the disk said neither yes nor no, and the new process takes them
  /// as asked for (documented in the README).
  func restart() {
    for (key, values) in doubtful { asked[key, default: []].formUnion(values) }
    doubtful.removeAll()
    snapshot()
  }
  func refuse(_ key: EntityKey) {
    if doubtful.isEmpty { doubtSince = recorder.operations.count }
    doubtful[key, default: []].formUnion(asked[key] ?? [])
    asked[key] = nil
    snapshot()
  }

  private(set) var labels: [String] = ["start"]
  private func snapshot(_ label: String = #function) {
    labels.append(label)
    var e = Expectation()
    for key in Set(confirmed.keys).union(asked.keys).union(doubtful.keys) {
      e.allowed[key] = (asked[key] ?? []).union(doubtful[key] ?? []).union([confirmed[key] ?? nil])
    }
    marks.append(e)
    recorder.mark(marks.count - 1)
  }
}

private func materialise(_ image: CrashImage) throws -> LocalBackendTestFolder {
  let temp = try LocalBackendTestFolder()
  for (name, inode) in image.names {
    let fd = try FileDescriptor.open(temp.folder.file(name), .writeOnly, options: [.create, .truncate])
    try fd.writeAll(image.contents[inode] ?? [])
    fd.close()
  }
  return temp
}

private func k(_ id: String) -> EntityKey { EntityKey(kind: "artist", id: id) }

/// Asks the local backend for each change of `batch`, noting in `ledger` what was asked
/// and what was acknowledged; two loop turns: the commit, then the completions.
private func saveLocal(_ batch: [(String, Bool)], _ backend: LocalBackend, _ loop: EventLoop, _ ledger: Ledger) throws {
  for (id, f) in batch {
    ledger.ask(k(id), f ? true : nil)
    backend.setFollowing(k(id), f) { result in
      if case .success = result { ledger.acknowledge(k(id), f ? true : nil) } else { ledger.refuse(k(id)) }
    }
  }
  try loop.runOnce(wait: false)
  try loop.runOnce(wait: false)
}

@Suite struct CrashConsistencyTests {
  /// Runs `history` on a recorded folder, then recovers with `recover` from every
  /// crash image and checks it against the ledger.
  func explore(
    maximumPending: Int = 10,
    _ history: (StateFolder, Ledger, FileLayerRecorder) throws -> Void,
    recover: (StateFolder) throws -> [EntityKey: Bool]
  ) throws -> Int {
    let recorder = FileLayerRecorder()
    let temp = try LocalBackendTestFolder()
    var folder = temp.folder
    folder.observer = recorder
    let ledger = Ledger(recorder)
    try history(folder, ledger, recorder)
    let images = recorder.crashImages(maximumPending: maximumPending)
    if Process.environment("CRASH_DEBUG") != nil {
      for (i, m) in ledger.marks.enumerated() { print("mark \(i) \(ledger.labels[i]): \(m.allowed)") }
      for op in recorder.operations {
        if case .write(let inode, let bytes) = op {
          print("write(\(inode)): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        } else {
          print(op)
        }
      }
    }
    for (n, (image, mark)) in images.enumerated() {
      let crashed = try materialise(image)
      let recovered: [EntityKey: Bool]
      do {
        recovered = try recover(crashed.folder)
      } catch {
        Issue.record("image \(n) (\(image.names.keys.sorted())): recovery failed: \(error)")
        continue
      }
      // The replace protocol (fsync the temporary before the rename) never lets a
      // crash leave a snapshot that cannot be read: nothing is set aside.
      let names = try FileSystem.contentsOfFolder(crashed.path)
      #expect(!names.contains { $0.contains(".corrupt-") }, "image \(n): \(names.sorted())")
      if Process.environment("CRASH_DEBUG") != nil {
        print("image \(n) mark \(mark): \(recovered) allowed \(ledger.marks[mark].allowed)")
      }
      ledger.marks[mark].check(recovered, cut: "image \(n) at mark \(mark)")
    }
    return images.count
  }

  static func recoverOutbox(_ folder: StateFolder) throws -> [EntityKey: Bool] {
    let outbox = try Outbox(folder: folder)
    return Dictionary(uniqueKeysWithValues: outbox.unsettledIntents().map { ($0.0, $0.1) })
  }

  static func recoverLocal(_ folder: StateFolder) throws -> [EntityKey: Bool] {
    let backend = try LocalBackend(loop: try EventLoop(clock: ManualClock()), folder: folder)
    var result: [EntityKey: Bool] = [:]
    for id in ["a", "b", "c", "d", "e"] where backend.isFollowing(k(id)) { result[k(id)] = true }
    return result
  }

  @Test func theOutboxRecoversFromEveryCrashOfAHistory() throws {
    let count = try explore { folder, ledger, _ in
      let outbox = try Outbox(folder: folder)
      func commit(_ batch: [(String, Bool?)]) {
        for (id, w) in batch {
          outbox.record(k(id), wanted: w)
          ledger.ask(k(id), w)
        }
        #expect(outbox.commit())
        for (id, w) in batch { ledger.acknowledge(k(id), w) }
      }
      commit([("a", true), ("b", false)])
      commit([("c", true)])
      commit([("a", nil), ("b", true)])
      try outbox.compact()
      commit([("d", true), ("c", false)])
      commit([("e", true)])
    } recover: {
      try Self.recoverOutbox($0)
    }
    #expect(count > 100)
  }

  @Test func theLocalBackendRecoversFromEveryCrashOfAHistory() throws {
    let count = try explore { folder, ledger, _ in
      let loop = try EventLoop(clock: ManualClock())
      let backend = try LocalBackend(loop: loop, folder: folder)
      func save(_ batch: [(String, Bool)]) throws { try saveLocal(batch, backend, loop, ledger) }
      try save([("a", true), ("b", true)])
      try save([("c", true), ("a", false)])
      try backend.compact()
      try save([("d", true), ("b", false)])
      try backend.compact()
      try save([("e", true)])
    } recover: {
      try Self.recoverLocal($0)
    }
    #expect(count > 100)
  }

  /// Intents are recorded under this kind in the ledger, follows under `k`'s.
  static func intent(_ id: String) -> EntityKey { EntityKey(kind: "intent", id: id) }

  static func recoverShared(_ folder: StateFolder) throws -> [EntityKey: Bool] {
    let journal = try Journal(folder: folder)
    let backend = try LocalBackend(loop: try EventLoop(clock: ManualClock()), journal: journal)
    let outbox = try Outbox(journal: journal)
    var result: [EntityKey: Bool] = [:]
    for id in ["a", "b", "c", "d", "e"] where backend.isFollowing(k(id)) { result[k(id)] = true }
    for (key, wanted) in outbox.unsettledIntents() { result[intent(key.id)] = wanted }
    return result
  }

  /// A step of a shared-journal history.
  enum SharedStep {
    /// A loop turn with these mutations (distinct ids), whose fsyncs fail or not.
    case turn([(String, Bool)], failing: Bool = false)
    case compact(failing: Bool = false)
    case restart
  }

  /// Turns as the service makes them with the local backend: each records intents and
  /// follows in one journal, one commit makes both durable, the follows are confirmed
  /// in it and their intents settle (without an fsync, in the next commit).
  func exploreSharedJournal(
    before: (StateFolder, Ledger) throws -> Void = { _, _ in }, maximumPending: Int = 10, _ steps: [SharedStep]
  ) throws -> Int {
    var failing = false
    return try explore(maximumPending: maximumPending) { folder, ledger, recorder in
      recorder.fail = { op in
        if case .sync = op { return failing }
        return false
      }
      try before(folder, ledger)
      var loop = try EventLoop(clock: ManualClock())
      var journal = try Journal(folder: folder)
      var backend = try LocalBackend(loop: loop, journal: journal)
      var outbox = try Outbox(journal: journal)
      // Settlements wait for the next commit, which writes them (with its fsync); one
      // that is never written stays asked: its intent is sent once more after a restart.
      var unwrittenSettlements: [String] = []
      // Settled in memory, not yet known durable: a refused mutation of such an intent
      // goes back to settled (the outbox takes it back to what it wrote last).
      var settledNotDurable = Set<String>()
      // A rewrite makes the intents in memory durable, settlements whose write failed
      // included, except those recorded after it (by the completions it called).
      func acknowledgeRewrite(except recordedAfter: [String]) {
        let live = Dictionary(outbox.unsettledIntents().map { ($0.0.id, $0.1) }, uniquingKeysWith: { $1 })
        for id in ["a", "b", "c", "d", "e"] where !recordedAfter.contains(id) {
          // Only what the ledger allows now may be made durable.
          let allowed = ledger.marks.last?.allowed[Self.intent(id)] ?? [nil]
          #expect(allowed.contains(live[id]), "intent \(id) rewritten as \(String(describing: live[id]))")
          ledger.acknowledge(Self.intent(id), live[id])
          settledNotDurable.remove(id)
        }
      }
      for step in steps {
        switch step {
        case .restart:
          unwrittenSettlements.removeAll()
          settledNotDurable.removeAll()
          ledger.restart()
          loop = try EventLoop(clock: ManualClock())
          journal = try Journal(folder: folder)
          backend = try LocalBackend(loop: loop, journal: journal)
          outbox = try Outbox(journal: journal)
        case .compact(let failingNow):
          failing = failingNow
          if (try? journal.compact()) != nil { acknowledgeRewrite(except: []) }
          unwrittenSettlements.removeAll()
          failing = false
        case .turn(let batch, let failingNow):
          let asked = Set(batch.map(\.0))
          let settlements = unwrittenSettlements.filter { !asked.contains($0) }
          unwrittenSettlements.removeAll()
          failing = failingNow
          // Follows confirmed by the commit (an unchanged one even when it failed): the
          // store settles their intents.
          var confirmed: [String] = []
          for (id, f) in batch {
            ledger.ask(Self.intent(id), f)
            outbox.record(k(id), wanted: f)
            ledger.ask(k(id), f ? true : nil)
            backend.setFollowing(k(id), f) { [outbox] result in
              guard case .success = result else { return ledger.refuse(k(id)) }
              ledger.acknowledge(k(id), f ? true : nil)
              outbox.record(k(id), wanted: nil)
              confirmed.append(id)
            }
          }
          // The service's commit, before the turn's replies, which it answers (the
          // intents); the settlements it wrote are durable when it made an fsync (a turn
          // whose mutations changed nothing has none).
          let operations = recorder.operations.count
          let committed = outbox.commitOrTakeBack()
          let made = recorder.operations[operations...]
          let synced = made.contains { if case .sync = $0 { true } else { false } }
          let rewrote = made.contains { if case .rename = $0 { true } else { false } }
          if case .success = committed {
            for (id, f) in batch { ledger.acknowledge(Self.intent(id), f) }
          } else {
            for (id, _) in batch {
              ledger.refuse(Self.intent(id))
              if settledNotDurable.contains(id) { ledger.ask(Self.intent(id), nil) }
            }
          }
          if case .success = committed, synced {
            for id in settlements {
              ledger.acknowledge(Self.intent(id), nil)
              settledNotDurable.remove(id)
            }
            if rewrote { acknowledgeRewrite(except: confirmed) }
          }
          failing = false
          // Calls that changed nothing in a turn without a commit are confirmed here.
          try loop.runOnce(wait: false)
          for id in confirmed {
            ledger.ask(Self.intent(id), nil)
            unwrittenSettlements.append(id)
            settledNotDurable.insert(id)
          }
        }
      }
    } recover: {
      try Self.recoverShared($0)
    }
  }

  @Test func aSharedJournalRecoversIntentsAndFollowsFromEveryCrash() throws {
    for failingTurn in [nil, 2, 3] {
      let steps: [SharedStep] = [
        .turn([("a", true), ("b", true)]), .turn([("c", true), ("a", false)]), .compact(),
        .turn([("d", true), ("b", false)], failing: failingTurn == 2), .turn([("e", true)], failing: failingTurn == 3),
      ]
      #expect(try exploreSharedJournal(steps) > 100)
    }
  }

  /// Random shared-journal histories with failing fsyncs, compactions and restarts; a
  /// seed that fails can be run alone with CRASH_SEED.
  @Test(arguments: 1...12) func randomSharedJournalHistories(seed: UInt64) throws {
    if let only = Process.environment("CRASH_SEED"), UInt64(only) != seed { return }
    var random = SeededRandom(state: seed)
    var steps: [SharedStep] = []
    for _ in 0..<7 {
      let failing = random.next() % 4 == 0
      switch random.next() % 6 {
      case 0: steps.append(.restart)
      case 1: steps.append(.compact(failing: failing))
      default:
        var ids = ["a", "b", "c", "d"]
        var batch: [(String, Bool)] = []
        for _ in 0...(random.next() % 3) {
          batch.append((ids.remove(at: Int(random.next() % UInt64(ids.count))), random.next() % 2 == 0))
        }
        steps.append(.turn(batch, failing: failing))
      }
    }
    _ = try exploreSharedJournal(maximumPending: 8, steps)
  }

  /// A folder of an earlier version (outbox.log, local-follows.json and .log) is moved
  /// into the journal by the first commit: no crash during it loses or invents anything.
  @Test func theMoveFromTheFilesOfAnEarlierVersionSurvivesEveryCrash() throws {
    let count = try exploreSharedJournal(
      before: { folder, ledger in
        for id in ["a", "b", "c"] { ledger.ask(k(id), true) }
        ledger.ask(Self.intent("d"), true)
        try folder.replace(
          LocalBackend.legacySnapshotName, with: Array(#"{"version":1,"follows":{"artist":["a","b"]}}"#.utf8))
        try folder.replace(
          LocalBackend.legacyJournalName, with: Array((#"{"k":"artist","i":"c","f":true}"# + "\n").utf8))
        try folder.replace(Outbox.legacyFileName, with: Array((#"{"k":"artist","i":"d","w":true}"# + "\n").utf8))
        for id in ["a", "b", "c"] { ledger.acknowledge(k(id), true) }
        ledger.acknowledge(Self.intent("d"), true)
      }, [.turn([("e", true), ("a", false)]), .turn([("b", false)])])
    #expect(count > 100)
  }

  /// An fsync that fails after its write reached the page cache: the mutations are
  /// answered with an error, and the lines may still reach the disk later (a later
  /// fsync of the same file writes them). They must not win after a restart.
  @Test func anOutboxIntentRefusedForAFailedFsyncDoesNotComeBack() throws {
    var failing = false
    _ = try explore { folder, ledger, recorder in
      // The fsync fails, and so does the truncation that would cut its lines off.
      recorder.fail = { op in
        switch op {
        case .sync, .truncate: failing
        default: false
        }
      }
      let outbox = try Outbox(folder: folder)
      outbox.record(k("a"), wanted: true)
      ledger.ask(k("a"), true)
      #expect(outbox.commit())
      ledger.acknowledge(k("a"), true)
      failing = true
      outbox.record(k("a"), wanted: false)
      outbox.record(k("b"), wanted: true)
      ledger.ask(k("a"), false)
      ledger.ask(k("b"), true)
      #expect(!outbox.commit())
      ledger.refuse(k("a"))
      ledger.refuse(k("b"))
      failing = false
      outbox.record(k("c"), wanted: true)
      ledger.ask(k("c"), true)
      #expect(outbox.commit())
      ledger.acknowledge(k("c"), true)
    } recover: {
      try Self.recoverOutbox($0)
    }
  }

  @Test func aLocalFollowRefusedForAFailedFsyncDoesNotComeBack() throws {
    var failing = false
    _ = try explore { folder, ledger, recorder in
      recorder.fail = { op in
        if case .sync = op { return failing }
        return false
      }
      let loop = try EventLoop(clock: ManualClock())
      let backend = try LocalBackend(loop: loop, folder: folder)
      func save(_ batch: [(String, Bool)]) throws { try saveLocal(batch, backend, loop, ledger) }
      try save([("a", true)])
      failing = true
      try save([("a", false), ("b", true)])
      failing = false
      try save([("c", true)])
    } recover: {
      try Self.recoverLocal($0)
    }
  }

  /// Versions never go backwards across a crash: a start recovers a mark at least as
  /// high as every reservation made durable before the cut (versions below it may
  /// have been shown).
  @Test func theVersionMarkNeverGoesBackAfterACrash() throws {
    let recorder = FileLayerRecorder()
    let temp = try LocalBackendTestFolder()
    var folder = temp.folder
    folder.observer = recorder
    var reserved: [UInt64] = [0]
    for _ in 0..<3 {
      let versions = try VersionBase(folder: folder)
      reserved.append(versions.base + versions.headroom)
      recorder.mark(reserved.count - 1)
      versions.ensure(versions.headroom)  // a run that used its block up
      reserved.append(versions.base + versions.headroom)
      recorder.mark(reserved.count - 1)
    }
    for (n, (image, mark)) in recorder.crashImages().enumerated() {
      let crashed = try materialise(image)
      let recovered = try VersionBase(folder: crashed.folder)
      #expect(recovered.base >= reserved[mark], "image \(n): \(recovered.base) < \(reserved[mark])")
    }
  }

  /// Random histories with fsyncs and truncations that fail at random, compactions and
  /// restarts in between; a seed that fails can be run alone with CRASH_SEED.
  @Test(arguments: 1...12) func randomOutboxHistories(seed: UInt64) throws {
    if let only = Process.environment("CRASH_SEED"), UInt64(only) != seed { return }
    var random = SeededRandom(state: seed)
    var failing = false
    _ = try explore(maximumPending: 8) { folder, ledger, recorder in
      recorder.fail = { op in
        switch op {
        case .sync, .truncate: failing
        default: false
        }
      }
      var outbox = try Outbox(folder: folder)
      for _ in 0..<8 {
        failing = random.next() % 4 == 0
        switch random.next() % 6 {
        case 0:
          failing = false
          ledger.restart()
          outbox = try Outbox(folder: folder)
        case 1:
          if (try? outbox.compact()) == nil {
            // Not answered either way: a compaction only rewrites what is durable.
          }
        default:
          var batch: [(EntityKey, Bool?)] = []
          for _ in 0...(random.next() % 3) {
            let key = k(["a", "b", "c", "d"][Int(random.next() % 4)])
            let wanted: Bool? = [true, false, nil][Int(random.next() % 3)]
            outbox.record(key, wanted: wanted)
            ledger.ask(key, wanted)
            batch.append((key, wanted))
          }
          let saved = outbox.commit()
          // The last record per key is what the reply tells.
          var last: [EntityKey: Bool?] = [:]
          for (key, wanted) in batch { last[key] = .some(wanted) }
          for (key, wanted) in last.sorted(by: { $0.key.id < $1.key.id }) {
            if saved { ledger.acknowledge(key, wanted) } else { ledger.refuse(key) }
          }
        }
      }
    } recover: {
      try Self.recoverOutbox($0)
    }
  }

  @Test(arguments: 1...12) func randomLocalBackendHistories(seed: UInt64) throws {
    if let only = Process.environment("CRASH_SEED"), UInt64(only) != seed { return }
    var random = SeededRandom(state: seed)
    var failing = false
    _ = try explore(maximumPending: 8) { folder, ledger, recorder in
      recorder.fail = { op in
        if case .sync = op { return failing }
        return false
      }
      var loop = try EventLoop(clock: ManualClock())
      var backend = try LocalBackend(loop: loop, folder: folder)
      for _ in 0..<8 {
        failing = random.next() % 4 == 0
        switch random.next() % 6 {
        case 0:
          failing = false
          ledger.restart()
          loop = try EventLoop(clock: ManualClock())
          backend = try LocalBackend(loop: loop, folder: folder)
        case 1:
          try? backend.compact()
        default:
          for _ in 0...(random.next() % 3) {
            let id = ["a", "b", "c", "d"][Int(random.next() % 4)]
            let f = random.next() % 2 == 0
            ledger.ask(k(id), f ? true : nil)
            backend.setFollowing(k(id), f) { result in
              if case .success = result { ledger.acknowledge(k(id), f ? true : nil) } else { ledger.refuse(k(id)) }
            }
          }
          try loop.runOnce(wait: false)
          try loop.runOnce(wait: false)
        }
      }
    } recover: {
      try Self.recoverLocal($0)
    }
  }
}
