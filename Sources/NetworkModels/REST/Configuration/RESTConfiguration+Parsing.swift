import JSON

extension RESTConfiguration {
  /// Parses and checks a configuration file's text. Unknown fields are errors (a typo
  /// must not silently turn a quirk off); `$schema` and `description` are allowed
  /// anywhere an object is.
  public static func parse(_ text: String) throws(RESTConfigurationError) -> RESTConfiguration {
    var text = text
    return try text.withUTF8 { bytes in
      Result { () throws(RESTConfigurationError) in try parse(text: UnsafeRawBufferPointer(bytes)) }
    }.get()
  }

  /// Parses a file's bytes as `parse(String(decoding: bytes, as: UTF8.self))` does:
  /// valid UTF-8 (any configuration) in place, without the copy a `String` is;
  /// anything else as `String(decoding:)` repairs it.
  public static func parse(utf8 bytes: UnsafeRawBufferPointer) throws(RESTConfigurationError) -> RESTConfiguration {
    let valid = bytes.withMemoryRebound(to: UInt8.self) { (try? UTF8Span(validating: $0.span)) != nil }
    guard valid else { return try parse(String(decoding: bytes, as: UTF8.self)) }
    return try parse(text: bytes)
  }

  /// Reads `text` into a jansson tree, which the checks borrow from (`JSONView`) and
  /// which is freed before this returns (what the configuration keeps, it owns).
  private static func parse(text: UnsafeRawBufferPointer) throws(RESTConfigurationError) -> RESTConfiguration {
    let root: JSON
    do {
      root = try JSON.parse(text)
    } catch {
      throw RESTConfigurationError(path: "", reason: "not JSON: \(error)")
    }
    defer { withExtendedLifetime(root) {} }
    return try parse(Field(root: root.view))
  }

  static func parse(_ root: Field) throws(RESTConfigurationError) -> RESTConfiguration {
    try root.allow([
      "environments", "environment", "auth", "headers", "timeoutMs", "connectTimeoutMs",
      "maxInFlight", "retry", "kinds", "lists", "rateLimit", "values", "forbidden",
    ])
    var environments: [(String, String)] = []
    let environmentsField = try root.required("environments")
    for (name, value) in try environmentsField.members() {
      let url = try value.string()
      guard url.utf8.starts(with: "http://".utf8) || url.utf8.starts(with: "https://".utf8) else {
        throw value.error("must be an http:// or https:// URL")
      }
      environments.append((name, url.hasSuffix("/") ? String(url.dropLast()) : url))
    }
    guard !environments.isEmpty else { throw environmentsField.error("must name at least one environment") }
    let defaultEnvironment: String
    if let chosen = root.optional("environment") {
      defaultEnvironment = try chosen.string()
      guard environments.contains(where: { $0.0 == defaultEnvironment }) else {
        throw chosen.error("is not one of the environments (\(environments.map(\.0).joined(separator: ", ")))")
      }
    } else {
      defaultEnvironment = environments[0].0
    }

    var auth: Auth?
    var warnings: [RESTConfigurationError] = []
    if let field = root.optional("auth") {
      try field.allow(["header", "scheme", "tokenEnv", "tokenFile", "tokenCredential", "allowPlainHTTP"])
      auth = Auth(
        header: try field.required("header").headerName(),
        scheme: try field.optional("scheme").map { (scheme) throws(RESTConfigurationError) in
          try scheme.checkNoLineBreaks(try scheme.string())
        },
        tokenEnvironmentVariable: try field.optional("tokenEnv")?.string(),
        tokenFile: try field.optional("tokenFile")?.tokenFilePath(),
        tokenCredential: try field.optional("tokenCredential")?.credentialName())
      // The token goes with every request: over plain http:// anyone on the way to
      // another host reads it. Loopback never leaves the machine (the demo server).
      var allowPlainHTTP = false
      if let flag = field.optional("allowPlainHTTP") {
        guard let value = flag.json.bool else { throw flag.error("must be true or false") }
        allowPlainHTTP = value
      }
      for (_, place) in try environmentsField.members() where !tokenTravelsSafely(to: try place.string()) {
        let risk =
          "sends the auth token over plain http:// to a host other than loopback, where anyone on the way reads it"
        if allowPlainHTTP {
          warnings.append(place.error(risk + " (allowed by auth.allowPlainHTTP)"))
        } else {
          throw place.error(risk + ": use https://, or set auth.allowPlainHTTP to accept the risk")
        }
      }
    }

    let retry = try root.optional("retry")?.retryPolicy(base: RetryPolicy()) ?? RetryPolicy()

    let values = try root.optional("values").map { (field) throws(RESTConfigurationError) in try parseValues(field) }
    let valueNames = Set((values ?? [:]).keys).union(builtInValues)
    try root.checkHeaderPlaceholders(values: valueNames)
    var kinds: [String: KindEndpoints] = [:]
    let kindsField = try root.required("kinds")
    for (kind, field) in try kindsField.members() {
      if let problem = EntityKey.problem(kind: kind, id: "x") {
        throw field.error("is not a valid kind name: \(problem.reason)")
      }
      kinds[kind] = try parseKind(field, retry: retry, values: valueNames)
    }
    guard !kinds.isEmpty else { throw kindsField.error("must describe at least one kind") }

    var configuration = RESTConfiguration(
      environments: environments, defaultEnvironment: defaultEnvironment, auth: auth,
      headers: try root.optional("headers")?.headers() ?? [],
      timeoutMs: UInt64(try root.optional("timeoutMs")?.integer(in: 1...600_000) ?? 10_000),
      connectTimeoutMs: UInt64(try root.optional("connectTimeoutMs")?.integer(in: 1...600_000) ?? 3_000),
      maxInFlight: try root.optional("maxInFlight")?.integer(in: 1...1024) ?? 16, retry: retry, kinds: kinds)
    if let lists = root.optional("lists") {
      configuration.lists = try parseLists(lists, kinds: Set(kinds.keys), values: valueNames)
    }
    configuration.values = values ?? [:]
    configuration.warnings = warnings
    if let field = root.optional("rateLimit") { configuration.rateLimit = try field.rateLimitHeaders() }
    if let field = root.optional("forbidden") { configuration.forbidden = try field.forbidden() }
    return configuration
  }

  /// https://, or http:// to a loopback host: `localhost`, `127.x.y.z` or `[::1]`, with
  /// an optional port, written in lower case and without user info (what the schema's
  /// pattern says too: `http://localhost@evil.example` goes to evil.example).
  static func tokenTravelsSafely(to url: String) -> Bool {
    if url.hasPrefix("https://") { return true }
    guard url.hasPrefix("http://") else { return false }
    let authority = url.utf8.dropFirst("http://".utf8.count).prefix { !"/?#".utf8.contains($0) }
    let hostEnd =
      authority.first == UInt8(ascii: "[")
      ? authority.firstIndex(of: UInt8(ascii: "]")).map { authority.index(after: $0) } ?? authority.endIndex
      : authority.firstIndex(of: UInt8(ascii: ":")) ?? authority.endIndex
    let host = String(decoding: authority[..<hostEnd], as: UTF8.self)
    let port = authority[hostEnd...]
    guard port.isEmpty || (port.first == UInt8(ascii: ":") && port.dropFirst().allSatisfy(isDigit)) else {
      return false  // user info ("localhost@evil.example") or anything else
    }
    if host == "localhost" || host == "[::1]" { return true }
    let parts = host.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    return parts.count == 4 && host.hasPrefix("127.")
      && parts.dropFirst().allSatisfy { (1...3).contains($0.count) && $0.allSatisfy(isDigit) }
  }

  private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

  private static func parseKind(_ field: Field, retry: RetryPolicy, values: Set<String>) throws(RESTConfigurationError)
    -> KindEndpoints
  {
    try field.allow(["follow", "unfollow", "state", "detail", "retry"])
    let single = values.union(["id", "kind"])
    for name in ["follow", "unfollow", "state", "detail"] {
      try field.optional(name)?.checkHeaderPlaceholders(values: values)
    }
    let stateField = try field.required("state")
    try stateField.allow(Field.endpointKeys + ["following", "requested", "batch", "capture"])
    var batch: Batch?
    if let batchField = stateField.optional("batch") {
      try batchField.allow(["maxIds", "windowMs", "items", "id", "join", "by", "following", "requested"])
      let by = try batchField.batchReading()
      batch = Batch(
        maxIds: try batchField.optional("maxIds")?.integer(in: 1...1000) ?? 50,
        windowMs: UInt64(try batchField.optional("windowMs")?.integer(in: 0...10_000) ?? 2),
        items: try batchField.optional("items")?.pointer() ?? .root,
        id: by == .subset ? try batchField.required("id").pointer() : .root,
        join: try batchField.optional("join")?.joinSeparator(), by: by, flags: try batchField.batchFlags(by: by))
    }
    var stateEndpoint = try stateField.endpointFields(
      placeholders: batch == nil ? single : values.union(["ids", "kind"]), meanings: .state)
    stateEndpoint.endpoint.capture = try stateField.captures(batch: batch)
    if batch != nil && !stateEndpoint.usesIDs {
      throw stateField.error("a batched state endpoint must put \"{ids}\" as a whole query, form or JSON value")
    }
    if batch != nil, let rule = stateField.optional("following") ?? stateField.optional("requested") {
      throw rule.error("a batched state endpoint reads its items: say \"following\" and \"requested\" in \"batch\"")
    }
    var following = FollowingRule.success
    if let rule = stateField.optional("following") {
      if rule.json.kind == .string {
        switch try rule.string() {
        case "success": following = .success
        case "nonEmpty": following = .nonEmpty(.root)
        default: throw rule.error("must be \"success\", \"nonEmpty\", {\"pointer\": …} or {\"nonEmpty\": …}")
        }
      } else {
        switch try rule.flag() {
        case (let pointer, nil): following = .pointer(pointer)
        case (let pointer, let test?):
          following = test.match.map { .matches(pointer, $0) } ?? .nonEmpty(pointer)
        }
      }
    }
    let followField = try field.required("follow")
    var follow = try followField.mutationEndpoint(placeholders: single, meanings: .follow, also: ["capture"])
    follow.capture = try followField.captures(batch: nil)
    let captured = Set((follow.capture + stateEndpoint.endpoint.capture).map(\.name))
    let unfollow = try field.required("unfollow").mutationEndpoint(
      placeholders: single.union(captured), meanings: .unfollow)
    return KindEndpoints(
      follow: follow, unfollow: unfollow,
      state: StateEndpoint(
        endpoint: stateEndpoint.endpoint, following: following, batch: batch,
        requested: try stateField.optional("requested")?.pointer()),
      detail: try field.optional("detail")?.endpoint(placeholders: single, meanings: .none),
      retry: try field.optional("retry")?.retryPolicy(base: retry),
      unfollowNeeds: Template.placeholders(of: unfollow).intersection(captured))
  }
}

/// One value of the configuration and where it is, for errors that say where.
///
/// A checked file is read field by field, and most fields are fine: the JSON Pointer
/// of a field is made only when an error names it (`path`), from the field's parent
/// and its key or index. The value is borrowed from the parsed file, which `parse`
/// keeps alive (`JSONView`): a lookup allocates nothing.
struct Field {
  let json: JSONView
  /// The whole file, where `path` looks for the parent.
  private let root: JSONView
  /// The object or array holding this value; nil for the root.
  private let parent: JSONView?
  private let step: Step

  private enum Step {
    case root
    case key(String)
    case index(Int)
  }

  /// The file's top-level value.
  init(root: JSONView) {
    json = root
    self.root = root
    parent = nil
    step = .root
  }

  private init(_ json: JSONView, root: JSONView, parent: JSONView, step: Step) {
    self.json = json
    self.root = root
    self.parent = parent
    self.step = step
  }

  static let endpointKeys = [
    "method", "path", "query", "json", "form", "graphql", "headers", "timeoutMs", "onStatus", "attributes", "errors",
  ]

  /// This field's JSON Pointer ("" for the root).
  var path: String {
    guard let parent else { return "" }
    guard let parentPath = Field.path(to: parent, in: root, at: "") else {
      preconditionFailure("a field's parent is in the file it was read from")
    }
    switch step {
    case .root: return parentPath
    case .key(let key): return Field.child(parentPath, key)
    case .index(let index): return parentPath + "/\(index)"
    }
  }

  /// Where `target`, an object or array, is in `node` (itself at `path`). Containers
  /// are found by address: each is its own jansson value (scalars need not be: every
  /// `true` is the same one), so the first match is the one.
  private static func path(to target: JSONView, in node: JSONView, at path: String) -> String? {
    if node.raw == target.raw { return path }
    switch node.kind {
    case .object:
      for (key, value) in node.members where value.isObject || value.isArray {
        if let found = Field.path(to: target, in: value, at: child(path, key)) { return found }
      }
    case .array:
      for (index, value) in node.elements.enumerated() where value.isObject || value.isArray {
        if let found = Field.path(to: target, in: value, at: path + "/\(index)") { return found }
      }
    default: break
    }
    return nil
  }

  func error(_ reason: String) -> RESTConfigurationError { RESTConfigurationError(path: path, reason: reason) }

  /// The path of member `key` of the value at `path`, escaped as RFC 6901 says.
  static func child(_ path: String, _ key: String) -> String { JSONPointer.member(key, of: path) }

  /// Member `key` of this object, found in it as `value`.
  func member(_ key: String, _ value: JSONView) -> Field { Field(value, root: root, parent: json, step: .key(key)) }

  func optional(_ key: String) -> Field? { json[key].map { member(key, $0) } }

  func required(_ key: String) throws(RESTConfigurationError) -> Field {
    guard json.kind == .object else { throw error("must be an object") }
    guard let value = optional(key) else { throw error("\"\(key)\" is required") }
    return value
  }

  func allow(_ keys: [String]) throws(RESTConfigurationError) {
    guard json.kind == .object else { throw error("must be an object") }
    // By bytes, as the lookups that follow (jansson's) find members: a key that is only
    // canonically equivalent to a field's name would pass here and then be ignored.
    for (key, _) in json.members
    where !keys.contains(where: { $0.hasSameBytes(as: key) }) && !key.hasSameBytes(as: "$schema")
      && !key.hasSameBytes(as: "description")
    {
      throw RESTConfigurationError(
        path: Field.child(path, key), reason: "unknown field (expected one of: \(keys.joined(separator: ", ")))")
    }
  }

  /// The members of this object but `$schema` and `description`, in the file's order.
  func members() throws(RESTConfigurationError) -> Members {
    guard json.kind == .object else { throw error("must be an object") }
    return Members(members: json.members, object: self)
  }

  struct Members: Sequence, IteratorProtocol {
    var members: JSONView.Members
    let object: Field

    mutating func next() -> (String, Field)? {
      while let (key, value) = members.next() {
        if key != "$schema" && key != "description" { return (key, object.member(key, value)) }
      }
      return nil
    }
  }

  /// The elements of this array, in order (none when it is no array).
  var elements: LazyMapSequence<Range<Int>, Field> {
    (0..<(json.isArray ? json.count : 0)).lazy.map { index in
      Field(json[index]!, root: root, parent: json, step: .index(index))
    }
  }

  /// `{maxRetries, baseDelayMs, maxDelayMs, maxWaitMs, whenExhausted, onUnauthorized}`,
  /// each optional, over `base`.
  func retryPolicy(base: RetryPolicy) throws(RESTConfigurationError) -> RetryPolicy {
    try allow(["maxRetries", "baseDelayMs", "maxDelayMs", "maxWaitMs", "whenExhausted", "onUnauthorized"])
    var retry = base
    if let value = optional("maxRetries") { retry.maxRetries = try value.integer(in: 0...100) }
    if let value = optional("baseDelayMs") { retry.baseDelayMs = UInt64(try value.integer(in: 1...3_600_000)) }
    if let value = optional("maxDelayMs") { retry.maxDelayMs = UInt64(try value.integer(in: 1...3_600_000)) }
    if let value = optional("maxWaitMs") { retry.maxWaitMs = UInt64(try value.integer(in: 0...86_400_000)) }
    if let value = optional("whenExhausted") {
      switch try value.string() {
      case "rollback": retry.whenExhausted = .rollBack
      case "queue": retry.whenExhausted = .keepQueued
      default: throw value.error("must be \"rollback\" or \"queue\"")
      }
    }
    if let value = optional("onUnauthorized") {
      switch try value.string() {
      case "wait": retry.whenUnauthorized = .waitForCredentials
      case "rollback": retry.whenUnauthorized = .rollBack
      default: throw value.error("must be \"wait\" or \"rollback\"")
      }
    }
    return retry
  }

  func string() throws(RESTConfigurationError) -> String {
    guard let value = json.string else { throw error("must be a string") }
    return value
  }

  func integer(in range: ClosedRange<Int>) throws(RESTConfigurationError) -> Int {
    guard let value = json.integer, let int = Int(exactly: value), range.contains(int) else {
      throw error("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
    }
    return int
  }

  func pointer() throws(RESTConfigurationError) -> JSONPointer {
    guard let pointer = JSONPointer(try string()) else {
      throw error("must be a JSON Pointer: \"\" or starting with \"/\" (~0 for ~, ~1 for /)")
    }
    return pointer
  }

  /// Header values go into the request as they are: a line break would add a header.
  /// (Scalars, not Characters: "\r\n" is one Character.)
  @discardableResult
  func checkNoLineBreaks(_ text: String) throws(RESTConfigurationError) -> String {
    guard !text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) else {
      throw error("must not contain line breaks")
    }
    return text
  }

  func headerName() throws(RESTConfigurationError) -> String { try checkHeaderName(try string()) }

  /// A path as a file can hold one: not empty, no control characters (a NUL would cut
  /// it short), `~` only as `~/`.
  func tokenFilePath() throws(RESTConfigurationError) -> String {
    let path = try string()
    guard !path.isEmpty else { throw error("must not be empty") }
    guard !path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
      throw error("must not contain control characters")
    }
    if path.utf8.first == UInt8(ascii: "~") && path.utf8.count > 1 && path.utf8.dropFirst().first != UInt8(ascii: "/") {
      throw error("~user is not expanded: write the folder (only ~/ is the home folder)")
    }
    return path
  }

  /// A systemd credential's name, as `LoadCredential=` takes it: a file name in
  /// `$CREDENTIALS_DIRECTORY`, so no `/`, not `.` or `..`, no control characters.
  func credentialName() throws(RESTConfigurationError) -> String {
    let name = try string()
    guard !name.isEmpty, name.utf8.count <= 255, !name.utf8.contains(UInt8(ascii: "/")),
      !name.utf8.elementsEqual(".".utf8), !name.utf8.elementsEqual("..".utf8),
      !name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F })
    else {
      throw error("must be a credential's name as LoadCredential= gives it (a file name: no /, not . or ..)")
    }
    return name
  }

  /// `name` (this field's value, or its key) as a header name.
  @discardableResult
  func checkHeaderName(_ name: String) throws(RESTConfigurationError) -> String {
    let allowed = "!#$%&'*+-.^_`|~"
    guard !name.isEmpty,
      name.unicodeScalars.allSatisfy({
        ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || allowed.unicodeScalars.contains($0)
      })
    else { throw error("is not a valid HTTP header name") }
    return name
  }

  func headers() throws(RESTConfigurationError) -> [(name: String, value: String)] {
    var headers: [(name: String, value: String)] = []
    for (name, value) in try members() {
      try value.checkHeaderName(name)
      let text = try value.string()
      try value.checkNoLineBreaks(text)
      headers.append((name, text))
    }
    return headers
  }

  /// The name/value pairs of `query` or `form`: a value is a string template or an
  /// array of them (the parameter repeats).
  func parameters(placeholders: Set<String>) throws(RESTConfigurationError) -> [(name: String, value: String)] {
    var result: [(String, String)] = []
    for (name, value) in try members() {
      func add(_ item: Field) throws(RESTConfigurationError) {
        let text = try item.string()
        try item.checkPlaceholders(text, allowed: placeholders, wholeOnly: ["ids"])
        result.append((name, text))
      }
      if value.json.isArray {
        for item in value.elements { try add(item) }
      } else {
        try add(value)
      }
    }
    return result
  }

  /// Every `{name}` in `text` must be allowed here; some (`{ids}`) only as the whole value.
  func checkPlaceholders(_ text: String, allowed: Set<String>, wholeOnly: Set<String>) throws(RESTConfigurationError) {
    for name in Template.placeholders(in: text) {
      guard allowed.contains(name) else {
        if name == "id*" && allowed.contains("id") {
          throw error("{id*} splits the id into path segments: only a path can have it (use {id} here)")
        }
        let list = allowed.sorted().map { "{\($0)}" }.joined(separator: ", ")
        throw error("unknown placeholder {\(name)} (here: \(list))")
      }
      if wholeOnly.contains(name) && text != "{\(name)}" {
        throw error("{\(name)} must be the whole value")
      }
    }
  }

  func endpoint(placeholders: Set<String>, meanings: StatusMeanings) throws(RESTConfigurationError)
    -> RESTConfiguration.Endpoint
  {
    try allow(Field.endpointKeys)
    return try endpointFields(placeholders: placeholders, meanings: meanings).endpoint
  }

  /// Which status meanings an endpoint can honour: one that contradicts what the
  /// endpoint does would make the store send it again forever (a follow "confirmed"
  /// as not followed), and one that says nothing of it (`done` on a state check, any
  /// meaning on a detail) would fail every such answer at run time. `retry` fits
  /// every endpoint.
  enum StatusMeanings {
    case follow, unfollow, state, none

    var allowed: [RESTConfiguration.StatusMeaning] {
      switch self {
      case .follow: [.done, .following]
      case .unfollow: [.done, .notFollowing]
      case .state: [.following, .notFollowing]
      case .none: []
      }
    }

    var reason: String {
      let names = (allowed + [.retry]).map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
      switch self {
      case .follow: return "must be \(names) on a follow (\"notFollowing\" would contradict it)"
      case .unfollow: return "must be \(names) on an unfollow (\"following\" would contradict it)"
      case .state: return "must be \(names) on a state endpoint (\"done\" says nothing of the state)"
      case .none: return "must be \"retry\" on a detail or list (its answer is read, no status can stand for it)"
      }
    }
  }

  /// The endpoint fields of this object (the caller has checked which keys it allows),
  /// and whether `{ids}` is one of its values.
  func endpointFields(placeholders: Set<String>, meanings allowed: StatusMeanings = .none)
    throws(RESTConfigurationError) -> (
      endpoint: RESTConfiguration.Endpoint, usesIDs: Bool
    )
  {
    let method = try endpointMethod()
    let pathField = try required("path")
    let pathTemplate = try pathField.string()
    guard pathTemplate.utf8.first == UInt8(ascii: "/") else { throw pathField.error("must start with /") }
    // Sent as written (libcurl is told not to resolve dot segments), so a value can be
    // checked for the dot segment it would make: the template must have none itself.
    guard !Template.hasDotSegment(pathTemplate) else {
      throw pathField.error("has a \".\" or \"..\" segment (or %2E): servers resolve those, write the path meant")
    }
    // `{id*}`: the id split at "/" into path segments (RFC 6570's explode).
    let pathPlaceholders = placeholders.subtracting(["ids"]).union(placeholders.contains("id") ? ["id*"] : [])
    try pathField.checkPlaceholders(pathTemplate, allowed: pathPlaceholders, wholeOnly: [])
    let query = try optional("query")?.parameters(placeholders: placeholders) ?? []
    var usesIDs = query.contains { $0.value == "{ids}" }
    var body: RESTConfiguration.Body?
    if let graphql = try graphqlBody(placeholders: placeholders) {
      body = graphql.body
      usesIDs = usesIDs || graphql.usesIDs
    } else if let jsonField = optional("json") {
      if let form = optional("form") { throw form.error("an endpoint has a JSON body or a form body, not both") }
      usesIDs = try jsonField.checkJSONTemplate(placeholders: placeholders) || usesIDs
      body = .json(jsonField.json.owned)
    } else if let formField = optional("form") {
      let fields = try formField.parameters(placeholders: placeholders)
      usesIDs = usesIDs || fields.contains { $0.value == "{ids}" }
      body = .form(fields)
    }
    var meanings: [Int: RESTConfiguration.StatusMeaning] = [:]
    var rules: [Int: [RESTConfiguration.StatusRule]] = [:]
    if let field = optional("onStatus") {
      for (status, meaning) in try field.members() {
        guard status.utf8.count == 3, status.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let code = Int(status),
          (100...599).contains(code)
        else {
          throw meaning.error("\"\(status)\" is not an HTTP status")
        }
        if meaning.json.kind == .string {
          meanings[code] = try meaning.statusMeaning(allowed: allowed)
        } else {
          rules[code] = try meaning.statusRules(allowed: allowed)
        }
      }
    }
    return (
      RESTConfiguration.Endpoint(
        method: method, path: pathTemplate, query: query, body: body,
        headers: try optional("headers")?.headers() ?? [],
        timeoutMs: try optional("timeoutMs").map { (field) throws(RESTConfigurationError) in
          UInt64(try field.integer(in: 1...600_000))
        }, statusMeanings: meanings, statusRules: rules,
        attributes: try optional("attributes")?.pointer(), errors: try errorsRule()),
      usesIDs
    )
  }

  /// Checks every string in a JSON body template; true if one is `{ids}`.
  func checkJSONTemplate(placeholders: Set<String>) throws(RESTConfigurationError) -> Bool {
    switch json.kind {
    case .string:
      let text = try string()
      try checkPlaceholders(text, allowed: placeholders, wholeOnly: ["ids"])
      return text == "{ids}"
    case .object:
      var uses = false
      for (key, value) in json.members {
        uses = try member(key, value).checkJSONTemplate(placeholders: placeholders) || uses
      }
      return uses
    case .array:
      var uses = false
      for element in elements {
        uses = try element.checkJSONTemplate(placeholders: placeholders) || uses
      }
      return uses
    default:
      return false
    }
  }
}
