import JSON

extension RESTConfiguration {
  /// Where a 2xx answer states the resulting follow state (Mastodon's Relationship),
  /// instead of the status alone meaning "done". Once a pointer is configured the
  /// answer must say it: an answer without a boolean there is a failure, never a
  /// success by default.
  public struct AnswerPointers: Sendable {
    /// A boolean: whether the backend follows after the call.
    public var following: JSONPointer?
    /// Set when `following` is a test (`{"pointer": …}`, with `equals` or `contains`)
    /// rather than a boolean: Bluesky says "followed" by an at-uri being there, and an
    /// item without it is not followed (no failure).
    public var followingTest: ValueTest?
    /// A boolean: true (with `following` false) when the backend holds a follow
    /// request awaiting approval.
    public var requested: JSONPointer?

    public init(following: JSONPointer? = nil, requested: JSONPointer? = nil) {
      self.following = following
      self.requested = requested
    }

    public var isEmpty: Bool { following == nil && requested == nil }

    /// What `json` says of "following": true or false, or nil when it does not say
    /// (no boolean at a boolean pointer; a test always says).
    public func isFollowing(in json: JSON?) -> Bool? {
      if let followingTest { return json.map(followingTest.holds) ?? false }
      guard let following else { return nil }
      return json?.value(at: following)?.bool
    }
  }

  /// A flag read from a value rather than a boolean, in the words the state endpoint's
  /// `following` and a status rule's `when` use: `{"nonEmpty": P}` (there, and not
  /// null, an empty array or an empty object), `{"pointer": P, "equals" | "contains": V}`.
  public struct ValueTest: Sendable {
    public var pointer: JSONPointer
    /// nil: `nonEmpty`.
    public var match: StatusRule.Match?

    public func holds(in json: JSON) -> Bool {
      guard let value = json.value(at: pointer) else { return false }
      guard let match else { return Self.isNonEmpty(value) }
      guard !value.isNull else { return false }
      return StatusRule.text(of: value).map(match.accepts) ?? false
    }

    static func isNonEmpty(_ value: JSON) -> Bool {
      switch value.kind {
      case .array, .object: return value.count > 0
      case .null: return false
      default: return true
      }
    }
  }
}

extension Field {
  /// A flag, as a state endpoint's `following` writes one: a pointer to a boolean
  /// (`"/following"` or `{"pointer": P}`), `{"nonEmpty": P}`, or `{"pointer": P}` with a
  /// `when`'s `equals` or `contains`. The test is nil for a boolean.
  func flag() throws(RESTConfigurationError) -> (JSONPointer, RESTConfiguration.ValueTest?) {
    guard json.kind == .object else { return (try pointer(), nil) }
    try allow(["pointer", "nonEmpty", "equals", "contains"])
    switch (optional("pointer"), optional("nonEmpty")) {
    case (let pointer?, nil):
      let at = try pointer.pointer()
      return (at, try statusMatch().map { RESTConfiguration.ValueTest(pointer: at, match: $0) })
    case (nil, let pointer?):
      if let extra = optional("equals") ?? optional("contains") {
        throw extra.error("tests the value at \"pointer\": write {\"pointer\": …, \"equals\": …}")
      }
      let at = try pointer.pointer()
      return (at, RESTConfiguration.ValueTest(pointer: at, match: nil))
    case (_?, _?): throw error("has \"pointer\" or \"nonEmpty\", not both")
    case (nil, nil): throw error("must have \"pointer\" or \"nonEmpty\"")
    }
  }

  /// A follow or unfollow endpoint, with the pointers that read its answer.
  func mutationEndpoint(placeholders: Set<String>, meanings: StatusMeanings, also: [String] = [])
    throws(RESTConfigurationError) -> RESTConfiguration.Endpoint
  {
    try allow(Field.endpointKeys + ["following", "requested"] + also)
    var endpoint = try endpointFields(placeholders: placeholders, meanings: meanings).endpoint
    endpoint.answer = try answerPointers()
    return endpoint
  }

  /// `following` and `requested`, each a JSON Pointer to a boolean, when present;
  /// `following` may instead be a test of a value (`flag()`).
  func answerPointers() throws(RESTConfigurationError) -> RESTConfiguration.AnswerPointers {
    var pointers = RESTConfiguration.AnswerPointers(requested: try optional("requested")?.pointer())
    if let following = optional("following") {
      let (pointer, test) = try following.flag()
      pointers.following = pointer
      pointers.followingTest = test
    }
    return pointers
  }
}

extension Field {
  /// A batch's `following` and `requested`: with them the answer has one item per id
  /// asked, each saying its state; `requested` alone cannot say "following".
  func batchFlags(by: RESTConfiguration.BatchReading) throws(RESTConfigurationError) -> RESTConfiguration.AnswerPointers
  {
    let flags = try answerPointers()
    if by == .position, let field = optional("following") ?? optional("requested") {
      throw field.error("a batch read by position has a boolean per id: flags are read from items matched by \"id\"")
    }
    if flags.following == nil, optional("requested") != nil {
      throw error("has \"requested\" without \"following\": each item must say whether it is followed")
    }
    return flags
  }
}
