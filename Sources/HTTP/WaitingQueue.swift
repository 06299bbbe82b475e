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
/// request only updates `entries`; its old place in a FIFO is skipped when reached
/// (an entry is live there while its `serial` matches), so both are O(1).
struct WaitingQueue {
  struct Entry {
    let request: HTTPRequest
    let completion: (Result<HTTPResponse, HTTPError>) -> Void
    var priority: HTTPPriority
    var serial: UInt64
  }

  private var entries: [HTTPTicket: Entry] = [:]
  private var fifos: [[(ticket: HTTPTicket, serial: UInt64)]] = Array(repeating: [], count: HTTPPriority.allCases.count)
  private var heads = Array(repeating: 0, count: HTTPPriority.allCases.count)
  /// Live entries per priority, so `hasWaiting` need not scan.
  private var counts = Array(repeating: 0, count: HTTPPriority.allCases.count)
  private var serial: UInt64 = 0

  var count: Int { entries.count }

  func hasWaiting(atLeast priority: HTTPPriority) -> Bool {
    counts[priority.rawValue...].contains { $0 > 0 }
  }

  mutating func append(
    _ ticket: HTTPTicket, _ request: HTTPRequest, _ priority: HTTPPriority,
    _ completion: @escaping (Result<HTTPResponse, HTTPError>) -> Void
  ) {
    serial += 1
    entries[ticket] = Entry(request: request, completion: completion, priority: priority, serial: serial)
    fifos[priority.rawValue].append((ticket, serial))
    counts[priority.rawValue] += 1
  }

  mutating func remove(_ ticket: HTTPTicket) -> Entry? {
    guard let entry = entries.removeValue(forKey: ticket) else { return nil }
    counts[entry.priority.rawValue] -= 1
    if entries.isEmpty { clear() }
    return entry
  }

  /// To the back of `priority`'s FIFO (also when it is already there: a no-op then).
  mutating func move(_ ticket: HTTPTicket, to priority: HTTPPriority) -> Bool {
    guard var entry = entries[ticket] else { return false }
    guard entry.priority != priority else { return true }
    counts[entry.priority.rawValue] -= 1
    serial += 1
    entry.priority = priority
    entry.serial = serial
    entries[ticket] = entry
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
        // Found and taken out with one hash of the ticket, and moved, not copied
        // (a copy retains and releases each of the request's strings and arrays).
        if let found = entries.index(forKey: ticket), entries.values[found].serial == serial {
          let entry = entries.remove(at: found).value
          counts[entry.priority.rawValue] -= 1
          if entries.isEmpty { clear() }
          compact(index)
          return entry
        }
      }
    }
    return nil
  }

  private mutating func compact(_ index: Int) {
    if heads[index] > 1024 && heads[index] * 2 > fifos[index].count {
      fifos[index].removeFirst(heads[index])
      heads[index] = 0
    }
  }

  /// Nothing waits: the skipped places go too.
  private mutating func clear() {
    for index in fifos.indices {
      fifos[index].removeAll(keepingCapacity: true)
      heads[index] = 0
    }
  }
}
