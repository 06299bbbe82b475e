import JSON
import Posix

/// Named values (`{me}`: the user's own account id) and the built-in `{now}`, filled
/// into every template beside a request's own placeholders.
extension RESTSession {
  /// The configured values that have one: a literal, or a non-empty environment variable.
  static func initialValues(
    _ sources: [String: RESTConfiguration.ValueSource], _ environmentVariables: (String) -> String?
  ) -> [String: String] {
    var values: [String: String] = [:]
    for (name, source) in sources {
      switch source {
      case .literal(let text):
        values[name] = text
      case .environment(let variable):
        guard let text = environmentVariables(variable), !text.isEmpty else { continue }
        if let problem = ConfiguredValue.problem(text) {
          Log.warn("value {\(name)} from $\(variable) is not used: \(problem)")
          continue
        }
        values[name] = text
      }
    }
    return values
  }

  /// Whether any template may hold a value: only then is a request's dictionary widened
  /// (every request fills its templates).
  static func fillsValues(_ configuration: RESTConfiguration) -> Bool {
    guard configuration.values.isEmpty else { return true }
    let endpoints =
      configuration.kinds.values.flatMap {
        [$0.follow, $0.unfollow, $0.state.endpoint] + [$0.detail].compactMap { $0 }
      }
      + configuration.lists.values.map(\.endpoint)
    let headers = configuration.headers.flatMap { Template.placeholders(in: $0.value) }
    return !RESTConfiguration.builtInValues.isDisjoint(with: headers + endpoints.flatMap(placeholderNames))
  }

  /// The names `configure {values}` can set.
  public var valueNames: [String] { configuration.values.keys.sorted() }

  /// Sets the configured value `name` (nil forgets it); the reason it cannot, or nil.
  public func setValue(_ name: String, _ value: String?) -> String? {
    guard configuration.values[name] != nil else {
      let known = valueNames.map { "\"\($0)\"" }.joined(separator: ", ")
      return "no value \"\(name)\" in the configuration (its values: \(known.isEmpty ? "none" : known))"
    }
    if let value, let problem = ConfiguredValue.problem(value) { return problem }
    let same =
      switch (value, values[name]) {
      case (nil, nil): true
      case (let new?, let old?): new.utf8.elementsEqual(old.utf8)
      default: false
      }
    guard !same else { return nil }
    values[name] = value
    worldChanged(environment: false)
    return nil
  }

  public func value(_ name: String) -> String? { values[name] }

  /// `requestValues` (the id, the kind or a list's params) with the configured values
  /// and `{now}` beside them.
  func withConfiguredValues(_ requestValues: [String: String]) -> [String: String] {
    var all = values
    all["now"] = RFC3339.seconds(since1970: Int64(wallClock()))
    all.merge(requestValues) { _, own in own }
    return all
  }

  /// Why `endpoint` cannot be sent now: a configured value it names has none. Nothing
  /// is sent then: the template would go out with `{me}` in it.
  func unsetValue(_ endpoint: RESTConfiguration.Endpoint) -> FollowFailure? {
    guard !configuration.values.isEmpty else { return nil }
    for name in Self.placeholderNames(endpoint) where values[name] == nil {
      guard let source = configuration.values[name] else { continue }
      var ways = "configure {\"values\": {\"\(name)\": …}}"
      if case .environment(let variable) = source { ways = "the environment variable \(variable), or " + ways }
      return FollowFailure(
        .rejected(status: 0),
        "the value {\(name)} that \(endpoint.method) \(endpoint.path) needs is not set: set it with \(ways)")
    }
    return nil
  }

  /// Every `{name}` of an endpoint's path, query, body and headers.
  static func placeholderNames(_ endpoint: RESTConfiguration.Endpoint) -> [String] {
    var names = Array(Template.placeholders(of: endpoint))
    for (_, value) in endpoint.headers { names += Template.placeholders(in: value) }
    return names
  }
}
