import JSON

/// A GraphQL request as JSON over POST (https://graphql.org/learn/serving-over-http/#post-request):
/// `{"query", "variables", "operationName"}`.
public struct GraphQLBody: @unchecked Sendable {
  /// Sent as written: GraphQL text is full of braces, and a value spliced into it
  /// could change the operation. Values go in `variables`.
  public var query: String
  /// An object whose strings are templates, filled like a `json` body.
  public var variables: JSON
  public var operationName: String?

  /// The body with the template's strings filled and `extra` variables (a page's
  /// cursor and size) set over them.
  func encoded(_ values: [String: String], ids: [String], extra: [(String, JSON)] = []) -> [UInt8] {
    let filled = Template.fill(json: variables, values, ids: ids)
    for (name, value) in extra { filled.set(name, value) }
    let body = JSON.object().set("query", .string(query)).set("variables", filled)
    if let operationName { body.set("operationName", .string(operationName)) }
    return body.encoded()
  }
}

extension RESTConfiguration {
  /// Where a GraphQL answer lists its errors (GraphQL spec §7.1.4, "Errors":
  /// https://spec.graphql.org/October2021/#sec-Errors).
  static let graphqlErrors = JSONPointer("/errors")!

  /// `errors`: where a 2xx answer lists errors, and where an error says the HTTP status
  /// it stands for (metaphysics: `/extensions/httpStatusCodes/0`), if anywhere.
  public struct ErrorsRule: Sendable, Equatable {
    public var pointer: JSONPointer
    /// Relative to the first error; an integer from 100 to 599 there classifies the
    /// failure as that status would (a 502 is retried, a 401 waits for a token).
    public var status: JSONPointer?
  }
}

extension Field {
  /// An endpoint's method: required, except with `graphql`, which is POST (and only POST).
  func endpointMethod() throws(RESTConfigurationError) -> String {
    guard optional("graphql") != nil else {
      let methodField = try required("method")
      let method = try methodField.string()
      guard ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) else {
        throw methodField.error("must be GET, POST, PUT, PATCH or DELETE")
      }
      return method
    }
    if let methodField = optional("method"), try methodField.string() != "POST" {
      throw methodField.error("must be POST with \"graphql\" (a GraphQL request is a POST of JSON), or left out")
    }
    return "POST"
  }

  /// The `graphql` body of this endpoint, if it has one, and whether its variables use `{ids}`.
  func graphqlBody(placeholders: Set<String>) throws(RESTConfigurationError) -> (
    body: RESTConfiguration.Body, usesIDs: Bool
  )? {
    guard let field = optional("graphql") else { return nil }
    for other in ["json", "form"] {
      if let conflict = optional(other) {
        throw conflict.error("an endpoint with \"graphql\" sends the GraphQL request as its body: no \"\(other)\"")
      }
    }
    try field.allow(["query", "variables", "operationName"])
    let queryField = try field.required("query")
    let query = try queryField.string()
    guard !query.allSatisfy(\.isWhitespace) else { throw queryField.error("must be a GraphQL document, not empty") }
    var variables = JSON.object()
    var usesIDs = false
    if let variablesField = field.optional("variables") {
      guard variablesField.json.isObject else {
        throw variablesField.error("must be an object: variable name → value (its strings are templates)")
      }
      usesIDs = try variablesField.checkJSONTemplate(placeholders: placeholders)
      variables = variablesField.json.owned
    }
    let operationName = try field.optional("operationName").map { (name) throws(RESTConfigurationError) in
      let text = try name.string()
      guard !text.isEmpty else { throw name.error("must name the operation, or be left out") }
      return text
    }
    return (.graphql(GraphQLBody(query: query, variables: variables, operationName: operationName)), usesIDs)
  }

  /// `errors`: a pointer, or `{"pointer", "status"}`; `/errors` by default on a
  /// GraphQL endpoint, none on others.
  func errorsRule() throws(RESTConfigurationError) -> RESTConfiguration.ErrorsRule? {
    guard let field = optional("errors") else {
      return optional("graphql") != nil ? RESTConfiguration.ErrorsRule(pointer: RESTConfiguration.graphqlErrors) : nil
    }
    let pointerField: Field
    var status: JSONPointer?
    if field.json.kind == .object {
      try field.allow(["pointer", "status"])
      pointerField = try field.required("pointer")
      status = try field.optional("status")?.pointer()
    } else {
      pointerField = field
    }
    let pointer = try pointerField.pointer()
    guard !pointer.tokens.isEmpty else {
      throw pointerField.error("must point inside the answer (\"/errors\"), not at all of it")
    }
    return RESTConfiguration.ErrorsRule(pointer: pointer, status: status)
  }
}
