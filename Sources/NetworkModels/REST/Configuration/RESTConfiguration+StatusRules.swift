import HTTP
import JSON

extension RESTConfiguration {
  /// One meaning of a status that holds only when the answer says so, in a header or
  /// in its JSON body: GitHub answers a primary rate limit 403 with
  /// `x-ratelimit-remaining: 0`, bad permissions 403 without; YouTube a spent quota
  /// 403 with the reason `quotaExceeded` in the body, a refused token 403 with another.
  public struct StatusRule: Sendable {
    public var meaning: StatusMeaning
    /// The header that must be there; nil: no condition on headers.
    public var header: String?
    /// The value in the answer's JSON body that must be there (not null); nil: no
    /// condition on the body. A rule has a header or a pointer, not both: one `equals`
    /// could not say which it compares.
    public var pointer: JSONPointer?
    /// What the header's or the pointer's value must be; nil: any.
    public var match: Match?
    /// `retry` only: how long every request waits when the answer names no time
    /// (GitHub: "wait for at least one minute"); nil: the retry policy's backoff.
    public var waitMs: UInt64?

    public enum Match: Sendable, Equatable {
      case equals(String)
      /// Case-sensitive: error messages change their words less than their case rules.
      case contains(String)

      static func bytes(of value: String, contain part: String) -> Bool {
        let haystack = Array(value.utf8)
        let needle = Array(part.utf8)
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
          haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
      }

      func accepts(_ value: String) -> Bool {
        switch self {
        // By bytes: answers are outside text (String == is canonical equivalence).
        case .equals(let wanted): return value.hasSameBytes(as: wanted)
        case .contains(let part): return Self.bytes(of: value, contain: part)
        }
      }
    }

    /// `body` parses the answer once, on the first rule that reads it.
    func holds(for response: HTTPResponse, body: () -> JSON?) -> Bool {
      if let header {
        guard let value = response.header(header) else { return false }
        return match?.accepts(value) ?? true
      }
      guard let pointer else { return true }
      guard let value = body()?.value(at: pointer), !value.isNull else { return false }
      guard let match else { return true }
      return Self.text(of: value).map(match.accepts) ?? false
    }

    /// A string as it is; an integer or a boolean as its JSON text (`429`, `true`);
    /// anything else (a real, an array, an object) is compared with nothing.
    static func text(of value: JSON) -> String? {
      switch value.kind {
      case .string: return value.string
      case .integer: return value.integer.map { String($0) }
      case .bool: return value.bool.map { $0 ? "true" : "false" }
      default: return nil
      }
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
    rule(for: response)?.meaning ?? statusMeanings[response.status]
  }

  /// The first of the status's rules that holds for `response`; the body is parsed
  /// only when a rule reads it, and then once.
  func rule(for response: HTTPResponse) -> RESTConfiguration.StatusRule? {
    guard !statusRules.isEmpty, let rules = statusRules[response.status] else { return nil }
    var parsed: JSON?? = nil
    let body: () -> JSON? = {
      if let parsed { return parsed }
      let json = try? JSON.parse(response.body)
      parsed = .some(json)
      return json
    }
    return rules.first(where: { $0.holds(for: response, body: body) })
  }
}

extension Field {
  /// `{"means": M, "when": {"header": H | "pointer": P, "equals" | "contains": V},
  /// "waitMs": N}` (`when`, its match and `waitMs` optional), or an array of them
  /// tried in order.
  func statusRules(allowed: StatusMeanings) throws(RESTConfigurationError) -> [RESTConfiguration.StatusRule] {
    let items = json.kind == .array ? Array(elements) : [self]
    if json.kind == .array && items.isEmpty { throw error("must list at least one rule") }
    var rules: [RESTConfiguration.StatusRule] = []
    for item in items {
      guard item.json.kind == .object else {
        throw item.error("must be a meaning (a string) or {\"means\": …, \"when\": {\"header\": …, \"equals\": …}}")
      }
      try item.allow(["means", "when", "waitMs"])
      var rule = RESTConfiguration.StatusRule(meaning: try item.required("means").statusMeaning(allowed: allowed))
      if let when = item.optional("when") {
        try when.allow(["header", "pointer", "equals", "contains"])
        switch (when.optional("header"), when.optional("pointer")) {
        case (let header?, nil): rule.header = try header.headerName()
        case (nil, let pointer?): rule.pointer = try pointer.pointer()
        case (_?, _?):
          throw when.error("reads a \"header\" or a \"pointer\" into the body, not both: one match, one value")
        case (nil, nil): throw when.error("must name a \"header\" or a \"pointer\" into the answer's JSON body")
        }
        rule.match = try when.statusMatch()
      }
      if let wait = item.optional("waitMs") {
        guard rule.meaning == .retry else {
          throw try item.required("means").error("must be \"retry\" with \"waitMs\" (only a rate limit waits)")
        }
        rule.waitMs = UInt64(try wait.integer(in: 1...86_400_000))
      }
      rules.append(rule)
    }
    return rules
  }

  /// `when`'s `equals` or `contains` (not both), a string without line breaks.
  func statusMatch() throws(RESTConfigurationError) -> RESTConfiguration.StatusRule.Match? {
    switch (optional("equals"), optional("contains")) {
    case (let equals?, nil): return .equals(try equals.checkNoLineBreaks(try equals.string()))
    case (nil, let contains?):
      let part = try contains.checkNoLineBreaks(try contains.string())
      guard !part.isEmpty else { throw contains.error("must not be empty (leave it out to accept any value)") }
      return .contains(part)
    case (_?, _?): throw error("takes \"equals\" or \"contains\", not both")
    case (nil, nil): return nil
    }
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
    let remaining = optional("remainingHeader")
    if remaining != nil, optional("resetHeader") == nil {
      throw error("\"remainingHeader\" says when \"resetHeader\" counts: give \"resetHeader\" too")
    }
    return RESTConfiguration.RateLimitHeaders(
      resetHeader: try optional("resetHeader")?.headerName(), remainingHeader: try remaining?.headerName())
  }
}
