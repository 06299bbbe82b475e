import JSON

/// Ids and list params checked against the paths they would fill, before anything
/// changes or is sent.
extension RESTFollows {
  public func validatePlaceholders(kind: String, id: String) -> PlaceholderProblem? {
    if let problem = joinProblem(kind: kind, id: id) { return problem }
    // Runs before every call: only an id made of dots alone can fill a dot segment,
    // or one with a "/" split into segments (`{id*}`).
    guard Self.mayChangeSegments(id), let endpoints = session.configuration.kinds[kind]
    else {
      return nil
    }
    let values = ["kind": kind, "id": id]
    for endpoint in [endpoints.follow, endpoints.unfollow, endpoints.state.endpoint]
      + [endpoints.detail].compactMap({ $0 })
    {
      if let (_, reason) = Template.pathProblem(endpoint.path, values) {
        return PlaceholderProblem(path: "/id", reason: "id " + reason)
      }
    }
    return nil
  }

  /// Dots alone, or a "/": one pass over the bytes, borrowed where the string has
  /// them contiguous: the UTF-8 view's iterator costs several times as much a byte, twice a read.
  static func mayChangeSegments(_ id: String) -> Bool {
    func scan<S: Sequence<UInt8>>(_ bytes: S) -> Bool {
      var onlyDots = true
      for byte in bytes {
        if byte == UInt8(ascii: "/") { return true }
        if byte != UInt8(ascii: ".") { onlyDots = false }
      }
      return onlyDots
    }
    return id.utf8.withContiguousStorageIfAvailable { scan($0) } ?? scan(id.utf8)
  }

  /// Ids joined into one JSON string are sent as they are: an id holding the separator
  /// would read as two, so it is refused before anything changes or is sent (what
  /// cannot be read is not followed either). In a query or form each id is
  /// percent-encoded, so the separator inside one is escaped.
  func joinProblem(kind: String, id: String) -> PlaceholderProblem? {
    guard joinsIDsInJSON, let read = stateRead(kind), let join = read.state.batch?.join,
      case .json = read.state.endpoint.body,
      id.containsBytes(of: join)
    else { return nil }
    return PlaceholderProblem(
      path: "/id",
      reason: "id must not contain \"\(join)\": the batched state read joins the ids with it in one JSON string")
  }

  public func validatePlaceholders(list: String, params: [String: String]) -> PlaceholderProblem? {
    session.configuration.paramsProblem(list: list, params: params)
  }
}

extension RESTConfiguration {
  /// Why `params` cannot fill the path of `list` (a value made of dots would call
  /// another resource), or nil.
  func paramsProblem(list: String, params: [String: String]) -> PlaceholderProblem? {
    guard let endpoint = lists[list]?.endpoint, let (name, reason) = Template.pathProblem(endpoint.path, params)
    else { return nil }
    return PlaceholderProblem(
      path: JSONPointer.member(name, of: "/params"),
      reason: "params.\(name) " + reason)
  }
}
