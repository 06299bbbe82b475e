/// How many entities (or lists) a store keeps, and for how long one nobody uses stays.
public struct EvictionPolicy: Sendable, Equatable {
  /// Beyond this many, the least recently used that nothing holds are dropped, down to
  /// `lowWater`; what something holds stays, so the count can exceed this by those.
  public var maxCount: Int
  /// One unused this long is dropped; zero: only the count evicts.
  public var idle: Duration

  public init(maxCount: Int, idle: Duration) {
    self.maxCount = max(1, maxCount)
    self.idle = idle
  }

  public static let entities = EvictionPolicy(maxCount: 100_000, idle: .seconds(600))
  public static let lists = EvictionPolicy(maxCount: 256, idle: .seconds(600))

  /// Evicting for the count goes a little below it, so that a store at its cap does not
  /// scan everything for every new item.
  var lowWater: Int { maxCount - maxCount / 8 }
}
