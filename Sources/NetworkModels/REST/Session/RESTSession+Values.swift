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
    all["now"] = Self.rfc3339(secondsSinceEpoch: Int64(wallClock()))
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

  /// `2026-12-01T15:04:05Z`: RFC 3339 in UTC, whole seconds.
  static func rfc3339(secondsSinceEpoch seconds: Int64) -> String {
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let inDay = seconds - days * 86_400
    // Days to a civil date (H. Hinnant's algorithm, proleptic Gregorian).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let shifted = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * shifted + 2) / 5 + 1
    let month = shifted < 10 ? shifted + 3 : shifted - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let yearText = String(year)
    return String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText + "-\(two(month))-\(two(day))T"
      + "\(two(inDay / 3600)):\(two(inDay / 60 % 60)):\(two(inDay % 60))Z"
  }
}
