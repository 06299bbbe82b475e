import JSON

extension RESTConfiguration {
  /// A list's endpoint and how to read its pages.
  public struct ListEndpoints: @unchecked Sendable {
    public var endpoint: Endpoint
    /// The names `fetchList`'s params must give (the `{name}` placeholders).
    public var params: [String]
    public var paging: Paging
    /// The array of items in an answer.
    public var items: JSONPointer
    /// The count of the whole list in an answer, if the API gives one.
    public var total: JSONPointer?
    public var item: ItemReading
    public var sections: Sections?
    /// Kinds whose confirmed follows make the list out of date.
    public var dependsOn: Set<String>
  }

  public enum Paging: Sendable, Equatable {
    /// One page holds everything.
    case none
    /// `page=N&size=M`; a page with fewer than `size` items is the last.
    case page(pageParameter: String, sizeParameter: String, size: Int, first: Int)
    /// `offset=N&limit=M`; a page with fewer than `limit` items is the last. With
    /// `overlap`, a next page is asked for from `N-1`: its first element must be the
    /// last one read, or items before it moved.
    case offset(offsetParameter: String, limitParameter: String, limit: Int, overlap: Bool)
    /// The next page's cursor is in the answer; none (or "") means the end.
    case cursor(parameter: String, next: JSONPointer, sizeParameter: String?, size: Int?)
    /// The next page's URL is in the `Link` header (`rel="next"`).
    case link
    /// A GraphQL connection (Relay): the cursor goes in the variable `after`, the size
    /// in `first`; `<pageInfo>/hasNextPage` and `<pageInfo>/endCursor` say what is next.
    case connection(after: String, first: String?, size: Int?, pageInfo: JSONPointer)
  }

  public struct ItemReading: Sendable {
    public var kind: String
    public var id: JSONPointer
    public enum Following: Sendable, Equatable {
      case unknown
      /// Every item is followed (a "followed artists" list).
      case always
      case pointer(JSONPointer)
    }
    public var following: Following
    public var attributes: JSONPointer?
    /// Only these attribute fields are kept; nil keeps all.
    public var keep: [String]?
  }

  public struct Sections: Sendable {
    public enum Grouping: String, Sendable {
      /// The first letter, upper-cased; "#" for anything else.
      case firstLetter
      /// The value itself (a category).
      case value
    }
    public var pointer: JSONPointer
    public var by: Grouping
  }

  /// `kinds` are the configured kinds: an item's kind and `dependsOn` must name one,
  /// or a typo would silently never match.
  static func parseLists(_ field: Field, kinds: Set<String>, values: Set<String> = builtInValues)
    throws(RESTConfigurationError) -> [String: ListEndpoints]
  {
    var lists: [String: ListEndpoints] = [:]
    for (name, list) in try field.members() {
      guard !name.isEmpty, name.utf8.count <= 128 else { throw list.error("a list name is 1 to 128 bytes") }
      lists[name] = try parseList(list, kinds: kinds, values: values)
    }
    return lists
  }

  private static func parseList(_ field: Field, kinds: Set<String>, values: Set<String>) throws(RESTConfigurationError)
    -> ListEndpoints
  {
    // `attributes` is for follow endpoints: a list reads its items with `item`, and
    // any non-2xx answer fails the page (`onStatus` can only say "retry").
    try field.allow(
      Field.endpointKeys.filter { $0 != "attributes" }
        + ["params", "paging", "items", "total", "item", "sections", "dependsOn"])
    var params: [String] = []
    if let paramsField = field.optional("params") {
      guard paramsField.json.isArray else { throw paramsField.error("must be an array of parameter names") }
      for element in paramsField.elements {
        let name = try element.string()
        guard !["id", "ids", "kind"].contains(name), !name.isEmpty else {
          throw element.error("\(name) cannot be a list parameter")
        }
        if values.contains(name) {
          throw element.error("{\(name)} is a configured value or built-in")
        }
        params.append(name)
      }
    }
    try field.checkHeaderPlaceholders(values: values)
    let endpoint = try field.endpointFields(placeholders: values.union(params)).endpoint
    let paging = try field.optional("paging").map { (paging) throws(RESTConfigurationError) in
      try parsePaging(paging, graphql: field.optional("graphql") != nil)
    }
    let itemField = try field.required("item")
    try itemField.allow(["kind", "id", "following", "attributes", "keep"])
    let kindField = try itemField.required("kind")
    let kind = try kindField.string()
    guard kinds.contains(kind) else {
      throw kindField.error("is not one of the configured kinds (\(kinds.sorted().joined(separator: ", ")))")
    }
    var following = ItemReading.Following.unknown
    if let value = itemField.optional("following") {
      if let always = value.json.bool {
        following = always ? .always : .unknown
      } else {
        try value.allow(["pointer"])
        following = .pointer(try value.required("pointer").pointer())
      }
    }
    var keep: [String]?
    if let keepField = itemField.optional("keep") {
      guard keepField.json.isArray else { throw keepField.error("must be an array of field names") }
      keep = []
      for element in keepField.elements { keep?.append(try element.string()) }
    }
    var sections: Sections?
    if let sectionsField = field.optional("sections") {
      try sectionsField.allow(["pointer", "by"])
      let byField = sectionsField.optional("by")
      guard let by = Sections.Grouping(rawValue: try byField?.string() ?? "value") else {
        throw byField!.error("must be \"firstLetter\" or \"value\"")
      }
      sections = Sections(pointer: try sectionsField.required("pointer").pointer(), by: by)
    }
    var dependsOn: Set<String> = []
    if let dependsField = field.optional("dependsOn") {
      guard dependsField.json.isArray else { throw dependsField.error("must be an array of kinds") }
      for kindField in dependsField.elements {
        let kind = try kindField.string()
        guard kinds.contains(kind) else {
          throw kindField.error("is not one of the configured kinds (\(kinds.sorted().joined(separator: ", ")))")
        }
        dependsOn.insert(kind)
      }
    }
    return ListEndpoints(
      endpoint: endpoint, params: params, paging: paging ?? .none,
      items: try field.optional("items")?.pointer() ?? .root, total: try field.optional("total")?.pointer(),
      item: ItemReading(
        kind: kind, id: try itemField.required("id").pointer(), following: following,
        attributes: try itemField.optional("attributes")?.pointer(), keep: keep),
      sections: sections, dependsOn: dependsOn)
  }

  private static func parsePaging(_ field: Field, graphql: Bool) throws(RESTConfigurationError) -> Paging {
    let styleField = try field.required("style")
    switch try styleField.string() {
    case "none":
      try field.allow(["style"])
      return .none
    case "page":
      try field.allow(["style", "pageParameter", "sizeParameter", "size", "first"])
      return .page(
        pageParameter: try field.optional("pageParameter")?.string() ?? "page",
        sizeParameter: try field.optional("sizeParameter")?.string() ?? "size",
        size: try field.optional("size")?.integer(in: 1...1000) ?? 20,
        first: try field.optional("first")?.integer(in: 0...1) ?? 1)
    case "offset":
      try field.allow(["style", "offsetParameter", "limitParameter", "limit", "overlap"])
      let limit = try field.optional("limit")?.integer(in: 1...1000) ?? 20
      let overlapField = field.optional("overlap")
      let overlap = try overlapField.map { (overlap) throws(RESTConfigurationError) in
        guard let value = overlap.json.bool else { throw overlap.error("must be true or false") }
        return value
      }
      if overlap == true, limit < 2, let limitField = field.optional("limit") {
        throw limitField.error("must be 2 or more with \"overlap\": a page of one item would only repeat the last")
      }
      return .offset(
        offsetParameter: try field.optional("offsetParameter")?.string() ?? "offset",
        limitParameter: try field.optional("limitParameter")?.string() ?? "limit", limit: limit,
        overlap: overlap ?? false)
    case "cursor":
      try field.allow(["style", "parameter", "next", "sizeParameter", "size"])
      let size = try field.optional("size")?.integer(in: 1...1000)
      if size == nil, field.optional("sizeParameter") != nil {
        throw field.error("\"sizeParameter\" needs \"size\": the value to send")
      }
      return .cursor(
        parameter: try field.optional("parameter")?.string() ?? "cursor", next: try field.required("next").pointer(),
        sizeParameter: size == nil ? nil : try field.optional("sizeParameter")?.string() ?? "size", size: size)
    case "link":
      try field.allow(["style"])
      return .link
    case "connection":
      return try parseConnection(field, graphql: graphql)
    default:
      throw styleField.error("must be \"none\", \"page\", \"offset\", \"cursor\", \"link\" or \"connection\"")
    }
  }
}
