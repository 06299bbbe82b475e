import JSON

extension RESTConfiguration {
  /// `{"style": "connection", "after", "first", "size", "pageInfo"}`: the GraphQL
  /// Cursor Connections paging (https://relay.dev/graphql/connections.htm). Only on a
  /// `graphql` list: the cursor and size are variables of its request.
  static func parseConnection(_ field: Field, graphql: Bool) throws(RESTConfigurationError) -> Paging {
    try field.allow(["style", "after", "first", "size", "pageInfo"])
    guard graphql else {
      throw field.error("\"connection\" paging sends its cursor as a GraphQL variable: the list needs \"graphql\"")
    }
    let size = try field.optional("size")?.integer(in: 1...1000)
    if size == nil, field.optional("first") != nil {
      throw field.error("\"first\" needs \"size\": the page size to send in it")
    }
    return .connection(
      after: try field.optional("after")?.variableName() ?? "after",
      first: size == nil ? nil : try field.optional("first")?.variableName() ?? "first", size: size,
      pageInfo: try field.required("pageInfo").pointer())
  }
}

extension Field {
  /// A GraphQL variable's name (spec §2.1.9, Names: https://spec.graphql.org/October2021/#Name).
  func variableName() throws(RESTConfigurationError) -> String {
    let name = try string()
    let bytes = Array(name.utf8)
    func letter(_ byte: UInt8) -> Bool {
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        || byte == UInt8(ascii: "_")
    }
    guard let first = bytes.first, letter(first),
      bytes.allSatisfy({ letter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
    else {
      throw error("must be a GraphQL variable name (letters, digits and _, not starting with a digit), without $")
    }
    return name
  }
}
