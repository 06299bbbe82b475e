import Testing

@testable import NetworkModels

/// `inspect`'s bounded listing against sorting everything and taking the first ones.
struct SmallestFirstTests {
  @Test(arguments: [0, 1, 3, 50, 500])
  func keepsTheSmallestInOrder(limit: Int) {
    var random = SplitMix64(seed: UInt64(limit) + 7)
    for count in [0, 1, 2, 49, 50, 51, 1000] {
      let values = (0..<count).map { _ in Int(random.next() % 97) }
      var smallest = SmallestFirst<(value: Int, index: Int)>(limit: limit) {
        ($0.value, $0.index) < ($1.value, $1.index)
      }
      for (index, value) in values.enumerated() { smallest.offer((value, index)) }
      let expected = values.enumerated().map { ($0.element, $0.offset) }.sorted { $0 < $1 }.prefix(limit)
      #expect(smallest.offered == count)
      #expect(smallest.kept.map(\.value) == expected.map(\.0) && smallest.kept.map(\.index) == expected.map(\.1))
    }
  }
}
