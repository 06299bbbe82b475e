import HTTP
import JSON

extension RESTConfiguration {
  /// One meaning of a status that holds only when the answer has a header (with a
  /// value): GitHub answers a primary rate limit 403 with `x-ratelimit-remaining: 0`,
  /// bad permissions 403 without.
  public struct StatusRule: Sendable {
    public var meaning: StatusMeaning
    /// The header that must be there; nil: the rule always holds.
    public var header: String?
    /// The value it must have (compared as sent, spaces around it trimmed); nil: any.
    public var equals: String?

    func holds(for response: HTTPResponse) -> Bool {
      guard let header else { return true }
      guard let value = response.header(header) else { return false }
      return equals.map { $0 == value } ?? true
    }
  }

  /// Where an API says when it takes requests again, beyond `Retry-After`.
  public struct RateLimitHeaders: Sendable {
    /// Read on a rate-limited answer (429, or a status meaning "retry"): epoch or
    /// delta seconds, an HTTP-date or ISO 8601 (`ResetTime`).
    public var resetHeader: String?
    /// When set, the reset header counts only on an answer where this header is 0:
    /// GitHub sends `x-ratelimit-reset` on every answer, the end of the hour's
    /// window, while a secondary limit's wait is its `retry-after`.
    public var remainingHeader: String?
  }
}

extension RESTConfiguration.Endpoint {
  /// What the configuration says `response`'s status means: the first of its rules
  /// that holds, else its plain meaning; nil for the default meaning.
  public func meaning(of response: HTTPResponse) -> RESTConfiguration.StatusMeaning? {
    if !statusRules.isEmpty, let rules = statusRules[response.status] {
      if let rule = rules.first(where: { $0.holds(for: response) }) { return rule.meaning }
    }
    return statusMeanings[response.status]
  }
}

extension Field {
  /// `{"means": M, "when": {"header": H, "equals": V}}` (`when` and `equals`
  /// optional), or an array of them tried in order.
  func statusRules(allowed: StatusMeanings) throws(RESTConfigurationError) -> [RESTConfiguration.StatusRule] {
    let items = json.kind == .array ? json.elements.enumerated().map { Field($1, path + "/\($0)") } : [self]
    if json.kind == .array && items.isEmpty { throw error("must list at least one rule") }
    var rules: [RESTConfiguration.StatusRule] = []
    for item in items {
      guard item.json.kind == .object else {
        throw item.error("must be a meaning (a string) or {\"means\": …, \"when\": {\"header\": …, \"equals\": …}}")
      }
      try item.allow(["means", "when"])
      var rule = RESTConfiguration.StatusRule(meaning: try item.required("means").statusMeaning(allowed: allowed))
      if let when = item.optional("when") {
        try when.allow(["header", "equals"])
        rule.header = try when.required("header").headerName()
        rule.equals = try when.optional("equals").map { (field) throws(RESTConfigurationError) in
          try field.checkNoLineBreaks(try field.string())
        }
      }
      rules.append(rule)
    }
    return rules
  }

  func statusMeaning(allowed: StatusMeanings) throws(RESTConfigurationError) -> RESTConfiguration.StatusMeaning {
    guard let value = RESTConfiguration.StatusMeaning(rawValue: try string()),
      value == .retry || allowed.allowed.contains(value)
    else { throw error(allowed.reason) }
    return value
  }

  /// `{"resetHeader": "x-ratelimit-reset", "remainingHeader": "x-ratelimit-remaining"}`.
  func rateLimitHeaders() throws(RESTConfigurationError) -> RESTConfiguration.RateLimitHeaders {
    try allow(["resetHeader", "remainingHeader"])
    let remaining = try optional("remainingHeader")
    if remaining != nil, optional("resetHeader") == nil {
      throw error("\"remainingHeader\" says when \"resetHeader\" counts: give \"resetHeader\" too")
    }
    return RESTConfiguration.RateLimitHeaders(
      resetHeader: try optional("resetHeader")?.headerName(), remainingHeader: try remaining?.headerName())
  }
}
