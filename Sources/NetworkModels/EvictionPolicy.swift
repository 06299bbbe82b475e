/// How many entities (or lists) a store keeps, and for how long one nobody uses stays.
public struct EvictionPolicy: Sendable, Equatable {
  /// Beyond this many, the least recently used that nothing holds are dropped, down to
  /// `lowWater`; what something holds stays, so the count can exceed this by those.
  public var maxCount: Int
  /// One unused this long is dropped; 0: only the count evicts.
  public var idleMs: UInt64

  public init(maxCount: Int, idleMs: UInt64) {
    self.maxCount = max(1, maxCount)
    self.idleMs = idleMs
  }

  public static let entities = EvictionPolicy(maxCount: 100_000, idleMs: 600_000)
  public static let lists = EvictionPolicy(maxCount: 256, idleMs: 600_000)

  /// Evicting for the count goes a little below it, so that a store at its cap does not
  /// scan everything for every new item.
  var lowWater: Int { maxCount - maxCount / 8 }
}
