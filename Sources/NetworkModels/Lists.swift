import JSON

/// One list as a client names it: `fetchList {list, params}`. Two requests with equal
/// params (whatever their member order) are the same list.
public struct ListKey: Hashable, Sendable, CustomStringConvertible {
  public let name: String
  /// The params as compact JSON text with sorted keys: the identity, and what
  /// ListState echoes.
  public let paramsText: String

  public init(name: String, paramsText: String = "{}") {
    self.name = name
    self.paramsText = paramsText
  }

  public var description: String { paramsText == "{}" ? name : "\(name) \(paramsText)" }

  /// By bytes (`ExactString`): params `{"q":"caf\u{E9}"}` and `{"q":"cafe\u{301}"}` are
  /// two lists to the API, so they are two here.
  public static func == (lhs: ListKey, rhs: ListKey) -> Bool {
    lhs.name.hasSameBytes(as: rhs.name) && lhs.paramsText.hasSameBytes(as: rhs.paramsText)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(ExactString(name))
    hasher.combine(ExactString(paramsText))
  }
}

/// Where the next page starts, in the paging style of the list's endpoint.
public enum PageToken: Sendable, Hashable {
  /// Page numbers (`page=2`).
  case number(Int)
  /// Offset and limit (`offset=40`).
  case offset(Int)
  /// An opaque cursor the previous answer gave.
  case cursor(String)
  /// A whole URL (an RFC 8288 `Link: <…>; rel="next"` header).
  case url(String)
}

/// What a backend is asked for: one page of one list.
public struct ListPageRequest: Sendable {
  public var key: ListKey
  /// The params as template values (`{gene}` → "pop-art"); numbers as their text.
  public var params: [String: String]
  /// nil: the first page.
  public var page: PageToken?

  public init(key: ListKey, params: [String: String] = [:], page: PageToken? = nil) {
    self.key = key
    self.params = params
    self.page = page
  }
}

/// One item of a list: a reference into the entity store, and what the list's answer
/// said of it.
public struct ListItem: Sendable, Equatable {
  public var key: EntityKey
  /// The follow state the answer implies (true in a "followed artists" list); nil
  /// when it says nothing.
  public var following: Bool?
  /// The kept attributes, compact JSON text.
  public var attributes: String?
  /// The title of the section this item belongs to, when the list has sections.
  public var sectionTitle: String?

  public init(key: EntityKey, following: Bool? = nil, attributes: String? = nil, sectionTitle: String? = nil) {
    self.key = key
    self.following = following
    self.attributes = attributes
    self.sectionTitle = sectionTitle
  }
}

public struct ListPage: Sendable {
  public var items: [ListItem]
  /// nil when this was the last page.
  public var next: PageToken?
  /// How many items the whole list holds, when the answer says (a list's `total`): a
  /// total that differs from the previous page's means items came or went meanwhile.
  public var total: Int?
  /// The page was asked for from one item before where it starts (offset paging with
  /// `overlap`): that item, which must be the last one the list's previous page held.
  public var overlap: Overlap?

  public enum Overlap: Sendable, Equatable {
    case item(EntityKey)
    /// The answer had no element there, or one without an id.
    case absent
  }

  public init(items: [ListItem], next: PageToken?, total: Int? = nil, overlap: Overlap? = nil) {
    self.items = items
    self.next = next
    self.total = total
    self.overlap = overlap
  }
}

/// What the service needs to know of a list before it fetches it.
public struct ListDescription: Sendable {
  /// Kinds whose confirmed follows and unfollows make the list out of date
  /// (`followedArtists` depends on `artist`).
  public var dependsOn: Set<String>
  /// Params `fetchList` must give; it takes no other.
  public var requiredParams: [String]

  public init(dependsOn: Set<String>, requiredParams: [String] = []) {
    self.dependsOn = dependsOn
    self.requiredParams = requiredParams
  }
}

/// Which page `fetchList` asks for.
public enum PageRequest: String, Sendable {
  /// The first page, unless the list is already loaded (then its current state).
  case first
  /// The page after the last one loaded (a retry after a failed page).
  case next
  /// The first page again, replacing the items once it arrives.
  case refresh
}

/// The lists every backend has: `following/<kind>`, what the backend says is
/// followed, paged locally.
enum FollowingList {
  static let prefix = "following/"
  static let pageSize = 50

  static func kind(of name: String) -> String? {
    guard name.hasPrefix(prefix) else { return nil }
    let kind = String(name.dropFirst(prefix.count))
    return EntityKey.problem(kind: kind, id: "x") == nil ? kind : nil
  }
}
