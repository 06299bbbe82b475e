/// A binary min-heap of (deadline, id, slot). Cancelled timers are dropped lazily by the
/// loop, which keeps cancel O(1); `slot` is where the loop keeps the timer's body.
struct TimerHeap {
  struct Entry {
    var deadline: LoopInstant
    var id: UInt64
    var slot: Int
  }

  private var entries: [Entry] = []

  var isEmpty: Bool { entries.isEmpty }

  func peek() -> Entry? { entries.first }

  mutating func insert(deadline: LoopInstant, id: UInt64, slot: Int) {
    entries.append(Entry(deadline: deadline, id: id, slot: slot))
    var child = entries.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      if precedes(entries[child], entries[parent]) {
        entries.swapAt(child, parent)
        child = parent
      } else {
        break
      }
    }
  }

  mutating func pop() -> Entry? {
    guard !entries.isEmpty else { return nil }
    entries.swapAt(0, entries.count - 1)
    let top = entries.removeLast()
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < entries.count && precedes(entries[left], entries[smallest]) { smallest = left }
      if right < entries.count && precedes(entries[right], entries[smallest]) { smallest = right }
      if smallest == parent { break }
      entries.swapAt(parent, smallest)
      parent = smallest
    }
    return top
  }

  /// Earlier deadline first; equal deadlines keep scheduling order (ids grow).
  private func precedes(_ a: Entry, _ b: Entry) -> Bool {
    a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
  }
}
