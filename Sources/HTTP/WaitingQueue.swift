import EventLoop

/// Which waiting request gets the next free connection. Named after the preloader's
/// interface states, because that is what decides them: `visible` before `display`
/// before `preload`, and `user` — what a user waits for or what changes data
/// (follow, unfollow, reads asked for directly, list pages) — before all of them.
public enum HTTPPriority: Int, Comparable, Sendable, CaseIterable {
  case preload, display, visible, user

  public static func < (a: HTTPPriority, b: HTTPPriority) -> Bool { a.rawValue < b.rawValue }
}

/// Names one request sent through an `HTTPClient`, for `cancel` and `setPriority`.
public struct HTTPTicket: Hashable, Sendable {
  let raw: UInt64
}

/// Requests waiting for a connection: one FIFO per priority. Cancelling or moving a
/// request only updates its entry; its old place in a FIFO is skipped when reached
/// (an entry is live there while its `serial` matches), so both are cheap.
///
/// The entries are kept in the order their tickets were issued (tickets only grow), so
/// one is found by its ticket with a binary search, nearly always at once (the first
/// live one: requests of one priority leave in the order they came). A table keyed by
/// the ticket hashed it on the way in and again on the way out, and grew and rehashed
/// with a burst.
struct WaitingQueue {
  struct Entry {
    let request: HTTPRequest
    let screen: SentRequest.Screen?
    let completion: SentRequest.Completion
  }

  /// A request's place among those waiting. The bookkeeping is scalars beside the entry:
  /// asking whether an `Entry?` is nil copied it (every string of its request retained
  /// and released).
  private struct Slot {
    let ticket: HTTPTicket
    var priority: HTTPPriority
    /// Its place in its priority's FIFO; 0: a gap (the request left out of order).
    var serial: UInt64
    var entry: Entry?
    /// When it came (for `HTTPClient.waitingRequests`).
    let queuedAt: LoopInstant
  }

  /// By ticket.
  private var slots: [Slot] = []
  /// The slots before it are all gaps.
  private var head = 0
  private var live = 0
  private var fifos: [[(ticket: HTTPTicket, serial: UInt64)]] = Array(repeating: [], count: HTTPPriority.allCases.count)
  private var heads = Array(repeating: 0, count: HTTPPriority.allCases.count)
  /// Live entries per priority, so `hasWaiting` need not scan.
  private var counts = Array(repeating: 0, count: HTTPPriority.allCases.count)
  private var serial: UInt64 = 0

  var count: Int { live }

  func hasWaiting(atLeast priority: HTTPPriority) -> Bool {
    live > 0 && counts[priority.rawValue...].contains { $0 > 0 }
  }

  /// `ticket` is newer than every ticket appended before.
  mutating func append(
    _ ticket: HTTPTicket, _ request: HTTPRequest, _ priority: HTTPPriority,
    at now: LoopInstant = LoopInstant(nanoseconds: 0), screen: SentRequest.Screen? = nil,
    _ completion: @escaping SentRequest.Completion
  ) {
    precondition(slots.last.map { $0.ticket.raw < ticket.raw } ?? true, "tickets only grow")
    serial += 1
    slots.append(
      Slot(
        ticket: ticket, priority: priority, serial: serial,
        entry: Entry(request: request, screen: screen, completion: completion),
        queuedAt: now))
    live += 1
    fifos[priority.rawValue].append((ticket, serial))
    counts[priority.rawValue] += 1
  }

  /// Takes out every waiting entry `leaves` picks, oldest first.
  mutating func removeAll(where leaves: (Entry) -> Bool) -> [Entry] {
    let tickets = slots[head...].compactMap { slot in slot.entry.map(leaves) == true ? slot.ticket : nil }
    return tickets.compactMap { remove($0) }
  }

  mutating func remove(_ ticket: HTTPTicket) -> Entry? {
    guard let index = slot(of: ticket) else { return nil }
    return take(index)
  }

  /// To the back of `priority`'s FIFO (also when it is already there: a no-op then).
  mutating func move(_ ticket: HTTPTicket, to priority: HTTPPriority) -> Bool {
    guard let index = slot(of: ticket) else { return false }
    let old = slots[index].priority
    guard old != priority else { return true }
    counts[old.rawValue] -= 1
    serial += 1
    slots[index].priority = priority
    slots[index].serial = serial
    fifos[priority.rawValue].append((ticket, serial))
    counts[priority.rawValue] += 1
    return true
  }

  /// The oldest request of the highest priority that has one.
  mutating func popFirst() -> Entry? {
    for index in fifos.indices.reversed() where counts[index] > 0 {
      while heads[index] < fifos[index].count {
        let (ticket, serial) = fifos[index][heads[index]]
        heads[index] += 1
        if let found = slot(of: ticket), slots[found].serial == serial {
          compact(index)
          return take(found)
        }
      }
    }
    return nil
  }

  /// The first `limit` requests waiting, oldest first, with their priority and when they came.
  func oldest(_ limit: Int) -> [(request: HTTPRequest, priority: HTTPPriority, queuedAt: LoopInstant)] {
    var found: [(request: HTTPRequest, priority: HTTPPriority, queuedAt: LoopInstant)] = []
    for slot in slots[head...] where found.count < limit {
      if let entry = slot.entry { found.append((entry.request, slot.priority, slot.queuedAt)) }
    }
    return found
  }

  /// Where the live entry of `ticket` is.
  private func slot(of ticket: HTTPTicket) -> Int? {
    var low = head
    var high = slots.count
    // Nearly always the first: checked before the search.
    if low < high, slots[low].ticket == ticket { return slots[low].serial == 0 ? nil : low }
    while low < high {
      let middle = low + (high - low) / 2
      if slots[middle].ticket.raw < ticket.raw { low = middle + 1 } else { high = middle }
    }
    guard low < slots.count, slots[low].ticket == ticket, slots[low].serial != 0 else { return nil }
    return low
  }

  /// Takes the entry out of its slot (moved, not copied: a copy retains and releases
  /// each of the request's strings and arrays), leaving a gap.
  private mutating func take(_ index: Int) -> Entry {
    var entry: Entry?
    swap(&entry, &slots[index].entry)
    slots[index].serial = 0
    live -= 1
    counts[slots[index].priority.rawValue] -= 1
    if live == 0 {
      clear()
    } else {
      while slots[head].serial == 0 { head += 1 }
      // Gaps go once they are most of the slots: each request is moved at most a few
      // times, however long another waits ahead of it.
      if slots.count - live > max(1024, 2 * live) {
        slots.removeAll { $0.serial == 0 }
        head = 0
      }
    }
    return entry!
  }

  private mutating func compact(_ index: Int) {
    if heads[index] > 1024 && heads[index] * 2 > fifos[index].count {
      fifos[index].removeFirst(heads[index])
      heads[index] = 0
    }
  }

  /// Nothing waits: the gaps and the skipped places go too.
  private mutating func clear() {
    slots.removeAll(keepingCapacity: true)
    head = 0
    for index in fifos.indices {
      fifos[index].removeAll(keepingCapacity: true)
      heads[index] = 0
    }
  }
}
