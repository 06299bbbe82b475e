extension Dictionary {
  /// Dictionaries keep their capacity when emptied: one holding under a quarter of a
  /// capacity above 1,024 is copied into one that fits, and true says the caller may
  /// give the memory back (`Memory.trim()`). Each shrink at least quarters the table,
  /// so the copies cost O(1) amortised per entry removed.
  public mutating func shrinkIfMostlyEmpty() -> Bool {
    guard capacity > 1024, count < capacity / 4 else { return false }
    var copy = [Key: Value](minimumCapacity: count)
    for (key, value) in self { copy[key] = value }
    self = copy
    return true
  }
}
