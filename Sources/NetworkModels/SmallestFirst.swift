/// The `limit` smallest of many elements, in order, and how many were offered: what a
/// bounded listing needs without sorting every element (`inspect` of 100,000 pending
/// entities lists 50). Each offer is a comparison with the largest kept, and an insertion
/// when smaller: O(n log limit + kept · limit).
struct SmallestFirst<Element> {
  let limit: Int
  let precedes: (Element, Element) -> Bool
  private(set) var kept: [Element] = []
  private(set) var offered = 0

  init(limit: Int, by precedes: @escaping (Element, Element) -> Bool) {
    self.limit = max(0, limit)
    self.precedes = precedes
    kept.reserveCapacity(min(self.limit, 1024))
  }

  mutating func offer(_ element: Element) {
    offered += 1
    guard limit > 0 else { return }
    if kept.count == limit {
      guard precedes(element, kept[kept.count - 1]) else { return }
      kept.removeLast()
    }
    var low = 0
    var high = kept.count
    while low < high {
      let middle = (low + high) / 2
      if precedes(element, kept[middle]) { high = middle } else { low = middle + 1 }
    }
    kept.insert(element, at: low)
  }
}
