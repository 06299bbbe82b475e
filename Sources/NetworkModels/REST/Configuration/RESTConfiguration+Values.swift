import JSON

extension RESTConfiguration {
  /// Where a named value (`{me}`) comes from until `configure {values}` sets it.
  public enum ValueSource: Sendable, Equatable {
    case literal(String)
    /// An environment variable, read when the backend starts; unset or empty: no value.
    case environment(String)
  }

  /// Values every template can use without configuring them: `{now}`, the current time
  /// in RFC 3339 UTC (`2026-12-01T15:04:05Z`).
  public static let builtInValues: Set<String> = ["now"]

  /// Names a value cannot take: they are the request's own placeholders.
  static let reservedValueNames: Set<String> = ["id", "ids", "kind", "now"]

  /// `{"me": {"env": "MASTODON_ACCOUNT_ID"}, "instance": {"value": "x"}}`.
  static func parseValues(_ field: Field) throws(RESTConfigurationError) -> [String: ValueSource] {
    var values: [String: ValueSource] = [:]
    for (name, source) in try field.members() {
      if let problem = valueNameProblem(name) { throw source.error(problem) }
      try source.allow(["value", "env"])
      switch (source.optional("value"), source.optional("env")) {
      case (let literal?, nil):
        values[name] = .literal(try literal.checkNoLineBreaks(try literal.string()))
      case (nil, let variable?):
        let variableName = try variable.string()
        guard !variableName.isEmpty else { throw variable.error("must name an environment variable") }
        values[name] = .environment(variableName)
      default:
        throw source.error("must have \"value\" (a string) or \"env\" (an environment variable), one of them")
      }
    }
    return values
  }

  /// Why `name` cannot be a value's name (nil when it can): it must be a placeholder
  /// name that means nothing else.
  public static func valueNameProblem(_ name: String) -> String? {
    guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic),
      name.unicodeScalars.allSatisfy({
        $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
      })
    else { return "a value's name is letters, digits and _, starting with a letter or _" }
    guard !reservedValueNames.contains(name) else {
      return "{\(name)} is a placeholder of its own: choose another name"
    }
    return nil
  }
}

extension Field {
  /// The placeholders of this endpoint's `headers`: headers go out as written, so only
  /// the configuration's values and `{now}` can fill them (an id could not be checked
  /// for line breaks everywhere it comes from).
  func checkHeaderPlaceholders(values: Set<String>) throws(RESTConfigurationError) {
    guard let headers = optional("headers") else { return }
    for (_, value) in try headers.members() {
      try value.checkPlaceholders(try value.string(), allowed: values, wholeOnly: [])
    }
  }
}
