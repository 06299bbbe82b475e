extension RESTBackend: PlaceholderValidating {
  public func validatePlaceholders(kind: String, id: String) -> PlaceholderProblem? {
    if let problem = joinProblem(kind: kind, id: id) { return problem }
    // Runs before every call: only an id made of dots alone can fill a dot segment,
    // or one with a "/" split into segments (`{id*}`).
    guard id.utf8.allSatisfy({ $0 == UInt8(ascii: ".") }) || id.utf8.contains(UInt8(ascii: "/")),
      let endpoints = configuration.kinds[kind]
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

  public func validatePlaceholders(list: String, params: [String: String]) -> PlaceholderProblem? {
    guard let endpoint = configuration.lists[list]?.endpoint,
      let (name, reason) = Template.pathProblem(endpoint.path, params)
    else { return nil }
    return PlaceholderProblem(
      path: "/params/" + name.replacingOccurrences("~", "~0").replacingOccurrences("/", "~1"),
      reason: "params.\(name) " + reason)
  }

}
