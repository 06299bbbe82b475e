import Posix
import Testing

@Suite struct DictionaryShrinkingTests {
  @Test func aMostlyEmptyTableIsCopiedIntoOneThatFitsWithItsEntries() {
    var table: [Int: String] = [:]
    for key in 0..<4096 { table[key] = "\(key)" }
    for key in 10..<4096 { table[key] = nil }
    let before = table.capacity
    let shrunk = table.shrinkIfMostlyEmpty()
    #expect(shrunk)
    #expect(table.capacity < before / 4)
    #expect(table == Dictionary(uniqueKeysWithValues: (0..<10).map { ($0, "\($0)") }))
  }

  @Test func aSmallOrQuarterFullTableIsLeftAlone() {
    var small = [1: 1, 2: 2]
    small[1] = nil
    let smallShrunk = small.shrinkIfMostlyEmpty()
    #expect(!smallShrunk)
    var quarterFull: [Int: Int] = [:]
    for key in 0..<4096 { quarterFull[key] = key }
    let capacity = quarterFull.capacity
    for key in (capacity / 4)..<4096 { quarterFull[key] = nil }
    let quarterFullShrunk = quarterFull.shrinkIfMostlyEmpty()
    #expect(!quarterFullShrunk)
    #expect(quarterFull.capacity == capacity)
  }
}
