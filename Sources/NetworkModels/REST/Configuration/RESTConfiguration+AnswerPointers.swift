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

  /// `{"pointer": P}`: the value at P is there and not null; with `equals` or
  /// `contains`, its text (as a status rule's `when` reads it) is that or has that.
  public struct ValueTest: Sendable {
    public var pointer: JSONPointer
    public var match: StatusRule.Match?

    public func holds(in json: JSON) -> Bool {
      guard let value = json.value(at: pointer), !value.isNull else { return false }
      guard let match else { return true }
      return StatusRule.text(of: value).map(match.accepts) ?? false
    }
  }
}

extension Field {
  /// `{"pointer": P}` with `equals` or `contains` or neither: the same words as a
  /// status rule's `when` on the body.
  func valueTest() throws(RESTConfigurationError) -> RESTConfiguration.ValueTest {
    try allow(["pointer", "equals", "contains"])
    guard let pointer = optional("pointer") else { throw error("must have a \"pointer\" to the value it tests") }
    return RESTConfiguration.ValueTest(pointer: try pointer.pointer(), match: try statusMatch())
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
  /// `following` may instead be a test of a value, as a status rule's `when` writes it.
  func answerPointers() throws(RESTConfigurationError) -> RESTConfiguration.AnswerPointers {
    var pointers = RESTConfiguration.AnswerPointers(requested: try optional("requested")?.pointer())
    if let following = optional("following") {
      if following.json.kind == .object {
        let test = try following.valueTest()
        pointers.following = test.pointer
        pointers.followingTest = test
      } else {
        pointers.following = try following.pointer()
      }
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
