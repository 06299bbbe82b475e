import Posix

/// What became of each intent (`getMutations`, the `mutations` topic): a follow rolled
/// back while no UI was open is still there to be told. One entry per accepted intent,
/// numbered by `seq` (rising, never reused on one state folder), with its outcome
/// once it has one; kept in `mutations.log` of the state folder
/// (`MutationLedger+Journal.swift`), bounded in entries and bytes, the oldest dropped
/// first.
///
/// The follow store reports each intent's life (`FollowStore.onMutation`); the
/// service says which client asked (`client`) and in which environment
/// (`environment`), as the store does not know them.
///
/// Must be used on the loop's thread.
public final class MutationLedger {
  public static let defaultMaxEntries = 10_000
  public static let defaultMaxBytes = 4 << 20

  /// Entries oldest first, by `seq`; `head` entries at the front are dropped already.
  var entries: [MutationEntry] = []
  var head = 0
  /// The bytes of each kept entry's line, summed.
  public internal(set) var bytes = 0
  /// The next entry's `seq`.
  public internal(set) var nextSeq: UInt64 = 1
  /// The entry of each entity whose intent has no final outcome yet (pending or
  /// waiting), in the environment it was made in.
  var open: [Slot: UInt64] = [:]
  /// Lines read at start, by `seq`, until they are put in order.
  var replayed: [UInt64: MutationEntry] = [:]
  /// Entries dropped by the bounds since start.
  public private(set) var dropped = 0

  public var maxEntries: Int {
    didSet { keepBounded() }
  }
  public var maxBytes: Int {
    didSet { keepBounded() }
  }

  /// The client name of the request being handled (set around the store's call).
  public var client: String?
  /// The active environment (nil: the backend has none).
  public var environment: () -> String? = { nil }
  /// Called with an entry each time its outcome changes (not at acceptance).
  public var onOutcome: ((MutationEntry) -> Void)?
  /// Where entries are made durable; nil: memory only (tests).
  var journal: Journal?
  /// Wall-clock milliseconds since 1970 (tests set another).
  public var now: () -> Int64 = { Int64((Process.wallClockSeconds() * 1000).rounded(.down)) }

  struct Slot: Hashable {
    var environment: String?
    var key: EntityKey
  }

  /// A ledger in memory only.
  public init(maxEntries: Int = MutationLedger.defaultMaxEntries, maxBytes: Int = MutationLedger.defaultMaxBytes) {
    self.maxEntries = maxEntries
    self.maxBytes = maxBytes
  }

  public var count: Int { entries.count - head }
  /// Entries with no final outcome yet: pending, or waiting for credentials.
  public var openCount: Int { open.count }
  /// Kept entries whose intent failed (refused or rolled back): what a user who asked
  /// for them should hear of. A pass over the kept entries (at most `maxEntries`).
  public var failedCount: Int { entries[head...].reduce(0) { $1.outcome.isFailure ? $0 + 1 : $0 } }
  /// The highest `seq` given so far (0: none).
  public var lastSeq: UInt64 { nextSeq - 1 }
  /// The lowest `seq` that may still be kept: entries after `since` were dropped when
  /// this is above `since + 1`.
  public var firstSeq: UInt64 { head < entries.count ? entries[head].seq : nextSeq }

  // MARK: What the store reports

  public func note(_ key: EntityKey, _ event: MutationEvent) {
    let slot = Slot(environment: environment(), key: key)
    let index = open[slot].flatMap(index(of:))
    switch event {
    case .accepted(let intent):
      if let index {
        // The same intent again: sent once more after a restart or an environment
        // switch, still the one the user asked for.
        if entries[index].intent == intent { return }
        finish(index, slot, .superseded, nil)
      }
      var entry = MutationEntry(
        seq: nextSeq, key: key, intent: intent, client: client, environment: slot.environment, acceptedAtMs: now())
      nextSeq += 1
      entry.bytes = write(entry)
      entries.append(entry)
      bytes += entry.bytes
      open[slot] = entry.seq
      keepBounded()
    case .sent:
      if let index { entries[index].attempts += 1 }
    case .outcome(let outcome, let failure):
      guard let index else { return }
      if outcome == .waiting, entries[index].outcome == .waiting, entries[index].failure == failure { return }
      finish(index, slot, outcome, failure)
    }
  }

  private func finish(_ index: Int, _ slot: Slot, _ outcome: MutationOutcome, _ failure: FollowFailure?) {
    var entry = entries[index]
    entry.outcome = outcome
    entry.failure = failure
    if outcome.isFinal {
      entry.settledAtMs = now()
      open[slot] = nil
    }
    let size = write(entry)
    bytes += size - entry.bytes
    entry.bytes = size
    entries[index] = entry
    onOutcome?(entry)
    keepBounded()
  }

  /// Where the entry `seq` is, when it is kept.
  func index(of seq: UInt64) -> Int? {
    var low = head
    var high = entries.count
    while low < high {
      let middle = (low + high) / 2
      if entries[middle].seq < seq { low = middle + 1 } else { high = middle }
    }
    return low < entries.count && entries[low].seq == seq ? low : nil
  }

  /// Drops the oldest entries while there are too many or they take too many bytes.
  func keepBounded() {
    while count > 0 && (count > maxEntries || bytes > maxBytes) {
      let entry = entries[head]
      head += 1
      bytes -= entry.bytes
      dropped += 1
      if !entry.outcome.isFinal {
        let slot = Slot(environment: entry.environment, key: entry.key)
        if open[slot] == entry.seq { open[slot] = nil }
      }
    }
    if head > 1024 && head * 2 > entries.count {
      entries.removeFirst(head)
      head = 0
    }
  }

  /// At start, once the outbox is read: an entry still open whose intent the outbox no
  /// longer holds settled in a run that stopped before writing how (a power loss, or a
  /// kill between the outbox's commit and the ledger's). It would show pending for
  /// ever: it becomes `unknown`.
  public func settleLost(_ outbox: Outbox) {
    let lost = open.filter { !outbox.holdsIntent(environment: $0.key.environment, key: $0.key.key) }
    for (slot, seq) in lost.sorted(by: { $0.value < $1.value }) {
      guard let index = index(of: seq) else { continue }
      finish(index, slot, .unknown, nil)
    }
    if !lost.isEmpty {
      Log.warn(
        "\(lost.count) intent(s) of the mutations ledger settled in a run that stopped before saying how; "
          + "their outcome is unknown")
    }
  }

  // MARK: Reading

  /// A page of `getMutations`: entries after `since` (of `kind`, of `id` when given),
  /// oldest first, at most `limit`.
  public struct Page {
    public var entries: [MutationEntry]
    /// What to pass as `since` for the next page.
    public var next: UInt64
    public var last: UInt64
    /// The limit cut the page: more entries follow `next`.
    public var more: Bool
    /// Entries after `since` were dropped by the bounds before this read.
    public var truncated: Bool
  }

  public func page(since: UInt64?, limit: Int, kind: String?, id: String?) -> Page {
    var found: [MutationEntry] = []
    var index = since.map { lowerIndex(after: $0) } ?? head
    var next = lastSeq
    var more = false
    while index < entries.count {
      let entry = entries[index]
      index += 1
      if let kind, !entry.key.kind.hasSameBytes(as: kind) { continue }
      if let id, !entry.key.id.hasSameBytes(as: id) { continue }
      if found.count == limit {
        more = true
        next = found.last!.seq
        break
      }
      found.append(entry)
    }
    let truncated = since.map { $0 < lastSeq && $0 &+ 1 < firstSeq } ?? false
    return Page(entries: found, next: next, last: lastSeq, more: more, truncated: truncated)
  }

  /// The index of the first kept entry whose `seq` is above `seq`.
  private func lowerIndex(after seq: UInt64) -> Int {
    var low = head
    var high = entries.count
    while low < high {
      let middle = (low + high) / 2
      if entries[middle].seq <= seq { low = middle + 1 } else { high = middle }
    }
    return low
  }
}

/// An event of an intent's life, as the follow store reports it.
public enum MutationEvent {
  /// A new intent for the entity; one still open is superseded by it.
  case accepted(Bool)
  /// One call to the backend for it.
  case sent
  /// What it came to, or waits in (`.waiting`), and why when it failed.
  case outcome(MutationOutcome, FollowFailure?)
}

public enum MutationOutcome: String, CaseIterable, Sendable {
  /// Accepted, not settled yet.
  case pending
  /// Refused for want of credentials: still pending, sent again when they change.
  case waiting
  case confirmed
  /// A follow the backend holds as a request awaiting approval.
  case requested
  /// The backend refused it for good (4xx): the state went back.
  case refused
  /// Retries ran out on failures that may pass (network, 5xx, 429): the state went back.
  case rolledBack
  /// A newer intent for the entity replaced it before it settled.
  case superseded
  /// It settled, but the run stopped before its outcome was written (a power loss): the
  /// entity's state says where it stands.
  case unknown

  public var isFinal: Bool { self != .pending && self != .waiting }

  /// `rawValue` as a literal, for the encoders: no `String` made.
  public var literal: StaticString {
    switch self {
    case .pending: "pending"
    case .waiting: "waiting"
    case .confirmed: "confirmed"
    case .requested: "requested"
    case .refused: "refused"
    case .rolledBack: "rolledBack"
    case .superseded: "superseded"
    case .unknown: "unknown"
    }
  }
  /// An outcome a user who asked for the intent should hear of.
  public var isFailure: Bool { self == .refused || self == .rolledBack }
}

/// One intent and what became of it.
public struct MutationEntry: Sendable, Equatable {
  public var seq: UInt64
  public var key: EntityKey
  /// Following wanted (true) or not.
  public var intent: Bool
  /// The client name the connection gave in `initialize`.
  public var client: String?
  public var environment: String?
  public var acceptedAtMs: Int64
  /// When it reached a final outcome.
  public var settledAtMs: Int64?
  public var outcome: MutationOutcome = .pending
  public var failure: FollowFailure?
  /// Calls to the backend made for it.
  public var attempts = 0
  /// The length of its line in the file: what the byte bound counts.
  var bytes = 0

  public init(
    seq: UInt64, key: EntityKey, intent: Bool, client: String?, environment: String?, acceptedAtMs: Int64
  ) {
    self.seq = seq
    self.key = key
    self.intent = intent
    self.client = client
    self.environment = environment
    self.acceptedAtMs = acceptedAtMs
  }
}

extension FollowStore {
  /// A pending mutation ended (`finishMutation`): confirmed (or requested) without a
  /// failure; else refused when the backend said no for good, rolled back when
  /// failures that may pass ran out of retries.
  func reportFinished(_ key: EntityKey, failure: FollowFailure?) {
    guard let onMutation else { return }
    guard let failure else {
      let requested = records[key]?.requested == true
      return onMutation(key, .outcome(requested ? .requested : .confirmed, nil))
    }
    onMutation(key, .outcome(failure.isRetryable ? .rolledBack : .refused, failure))
  }
}
