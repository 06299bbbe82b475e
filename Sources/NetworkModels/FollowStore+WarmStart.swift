import EventLoop
import Posix

/// A warm start: the states the last run confirmed, brought back from the state
/// folder (`WarmStates`) before anything is asked. Each is shown marked stale, with
/// its age, until an answer of this run confirms it: it never spares a call (a follow
/// equal to it is still sent), and reading or subscribing to it asks the backend again.
extension FollowStore {
  /// How old a record's confirmed state is, in milliseconds (what a stale one shows).
  func staleAge(_ record: Record) -> UInt64 {
    let now = loop.clock.now.nanoseconds
    return now > record.confirmedAt.nanoseconds ? (now - record.confirmedAt.nanoseconds) / 1_000_000 : 0
  }

  /// What the backend confirmed, most recently used first, for the next start; a
  /// stale state keeps its first confirmation's time.
  public func warmEntries(nowMs: UInt64) -> [WarmStates.Entry] {
    var kept: [(entry: WarmStates.Entry, touched: UInt32, version: UInt64)] = []
    kept.reserveCapacity(records.count)
    for (key, record) in records {
      guard let confirmed = record.confirmed else { continue }
      let ageMs = staleAge(record)
      let entry = WarmStates.Entry(
        key: key, following: confirmed, requested: record.requested,
        confirmedAtMs: nowMs > ageMs ? nowMs - ageMs : 0)
      kept.append((entry, record.touched, record.version))
    }
    // Ticks are coarse (a quarter of the idle time): within one, the later change first.
    kept.sort { ($0.touched, $0.version) > ($1.touched, $1.version) }
    return kept.map(\.entry)
  }

  /// Shows `entries` as stale states, up to the entity bound; what the backend cannot
  /// have (a kind this configuration lacks, an id it cannot send) and what this run
  /// already holds are left out. Returns how many were taken.
  @discardableResult
  public func restore(_ entries: [WarmStates.Entry], nowMs: UInt64) -> Int {
    let now = loop.clock.now.nanoseconds
    var taken = 0
    for entry in entries where records[entry.key] == nil && records.count < eviction.maxCount {
      guard backend.kindProblem(entry.key.kind) == nil,
        capabilities.placeholders?.validatePlaceholders(kind: entry.key.kind, id: entry.key.id) == nil
      else { continue }
      let ageNs = (nowMs > entry.confirmedAtMs ? nowMs - entry.confirmedAtMs : 0).multipliedReportingOverflow(
        by: 1_000_000)
      var record = freshRecord
      record.confirm(entry.requested ? .requested : FollowAnswer(entry.following))
      record.following = entry.following
      record.isStale = true
      record.confirmedAt = LoopInstant(
        nanoseconds: ageNs.overflow || ageNs.partialValue >= now ? 0 : now - ageNs.partialValue)
      records[entry.key] = record
      taken += 1
    }
    if taken > 0 { evictionClock.itemAdded() }
    return taken
  }
}
