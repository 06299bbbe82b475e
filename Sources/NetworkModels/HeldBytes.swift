/// The bytes the stores hold, as an estimate kept at insert and remove (never a walk):
/// entities' detail objects (their compact JSON text) and lists' items (each item's id,
/// kind, attributes and section title, plus `itemOverhead` for the item itself). Counts
/// bound how many entities and lists stay; this bounds what they hold, since one page
/// of tiny items or a few large details would otherwise keep memory without bound.
/// What is not counted: the tables' own overhead, follow records, captured values.
public final class HeldBytes {
  /// The bound (`--max-held-bytes`); zero: none.
  public var limit: Int
  public private(set) var entities = 0
  public private(set) var lists = 0

  public static let defaultLimit = 256 << 20
  /// What an item costs besides its strings: the struct, its place in the list and in
  /// the join.
  static let itemOverhead = 96

  public init(limit: Int = HeldBytes.defaultLimit) { self.limit = max(0, limit) }

  public var total: Int { entities + lists }
  var isOver: Bool { limit > 0 && total > limit }
  /// Evicting for bytes goes a little below the bound, as for the count.
  var lowWater: Int { limit - limit / 8 }

  func entityChanged(from old: String?, to new: String?) {
    entities += (new?.utf8.count ?? 0) - (old?.utf8.count ?? 0)
  }

  func listChanged(by delta: Int) { lists += delta }

  static func of(_ item: ListItem) -> Int {
    itemOverhead + item.key.kind.utf8.count + item.key.id.utf8.count + (item.attributes?.utf8.count ?? 0)
      + (item.sectionTitle?.utf8.count ?? 0)
  }

  static func of(_ items: [ListItem]) -> Int { items.reduce(0) { $0 + of($1) } }
}
