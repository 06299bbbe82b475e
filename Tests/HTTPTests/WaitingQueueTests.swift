import EventLoop
import NetworkModels
import Testing

@testable import HTTP

/// The waiting queue against the plainest model of it: a list of (ticket, priority, the
/// order it joined its priority), through long random runs of every operation, so gaps,
/// moves and compactions happen in every order.
@Suite struct WaitingQueueTests {
  struct Model {
    var waiting: [(ticket: UInt64, priority: HTTPPriority, order: UInt64)] = []
    var order: UInt64 = 0

    mutating func append(_ ticket: UInt64, _ priority: HTTPPriority) {
      order += 1
      waiting.append((ticket, priority, order))
    }

    mutating func remove(_ ticket: UInt64) -> Bool {
      guard let index = waiting.firstIndex(where: { $0.ticket == ticket }) else { return false }
      waiting.remove(at: index)
      return true
    }

    mutating func move(_ ticket: UInt64, _ priority: HTTPPriority) -> Bool {
      guard let index = waiting.firstIndex(where: { $0.ticket == ticket }) else { return false }
      if waiting[index].priority != priority {
        order += 1
        waiting[index].priority = priority
        waiting[index].order = order
      }
      return true
    }

    mutating func popFirst() -> UInt64? {
      let first = waiting.indices.min {
        (waiting[$0].priority, UInt64.max - waiting[$0].order) > (waiting[$1].priority, UInt64.max - waiting[$1].order)
      }
      return first.map { waiting.remove(at: $0).ticket }
    }
  }

  static func request(_ ticket: UInt64) -> HTTPRequest { HTTPRequest(method: "GET", url: "http://x/\(ticket)") }

  @Test(arguments: [1, 2, 3, 4])
  func behavesAsTheModel(seed: UInt64) {
    var random = SplitMix64(seed: seed)
    var queue = WaitingQueue()
    var model = Model()
    var ticket: UInt64 = 0
    // The first step where the queue and the model differ (an `#expect` a step is slow).
    var difference: String?
    func check(_ same: Bool, _ what: @autoclosure () -> String, _ step: Int) {
      if !same && difference == nil { difference = "step \(step): \(what())" }
    }
    // Phases that grow the queue to thousands (gaps compacted) and drain it (cleared).
    for step in 0..<12_000 {
      let growing = (step / 3_000) % 2 == 0
      let roll = random.next() % 100
      let priority = HTTPPriority(rawValue: Int(random.next() % 4))!
      let known = ticket == 0 ? 0 : 1 + random.next() % ticket
      if roll < (growing ? 55 : 10) {
        // Tickets only grow, with some skipped (requests that went out at once).
        ticket += 1 + random.next() % 3
        queue.append(HTTPTicket(raw: ticket), Self.request(ticket), priority, at: LoopInstant(nanoseconds: ticket)) {
          _ in
        }
        model.append(ticket, priority)
      } else if roll < 65 {
        let got = queue.popFirst()?.request.url
        let wanted = model.popFirst().map { Self.request($0).url }
        check(got == wanted, "popFirst \(got ?? "nil") != \(wanted ?? "nil")", step)
      } else if roll < 80 {
        let entry = queue.remove(HTTPTicket(raw: known))
        check((entry != nil) == model.remove(known), "remove \(known)", step)
        check(entry.map { $0.request.url == Self.request(known).url } ?? true, "removed \(known)", step)
      } else if roll < 82 {
        // What a hold does to the requests that may not wait for it: some of each
        // priority, in the order they came.
        let picked: (UInt64) -> Bool = { $0 % 7 == known % 7 }
        let got = queue.removeAll { picked(UInt64($0.request.url.dropFirst("http://x/".count))!) }.map(\.request.url)
        let wanted = model.waiting.map(\.ticket).filter(picked).sorted()
        for gone in wanted { _ = model.remove(gone) }
        check(got == wanted.map { Self.request($0).url }, "removeAll \(got) != \(wanted)", step)
      } else {
        check(queue.move(HTTPTicket(raw: known), to: priority) == model.move(known, priority), "move \(known)", step)
      }
      check(queue.count == model.waiting.count, "count \(queue.count) != \(model.waiting.count)", step)
      // What `inspect` lists: the oldest waiting, by the order they came, where they are now.
      if step % 50 == 0 {
        let oldest = queue.oldest(3)
        let expected = model.waiting.prefix(3)
        check(
          oldest.map(\.request.url) == expected.map { Self.request($0.ticket).url }
            && oldest.map(\.priority) == expected.map(\.priority)
            && oldest.map(\.queuedAt.nanoseconds) == expected.map(\.ticket), "oldest", step)
      }
      for level in HTTPPriority.allCases {
        check(
          queue.hasWaiting(atLeast: level) == model.waiting.contains { $0.priority >= level }, "hasWaiting \(level)",
          step)
      }
    }
    while let entry = queue.popFirst() {
      check(entry.request.url == model.popFirst().map { Self.request($0).url }, "drain", -1)
    }
    #expect(model.waiting.isEmpty)
    #expect(difference == nil)
  }

}
