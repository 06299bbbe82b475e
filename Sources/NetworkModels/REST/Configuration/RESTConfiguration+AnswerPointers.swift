import JSON

extension RESTConfiguration {
  /// Where a 2xx answer states the resulting follow state (Mastodon's Relationship),
  /// instead of the status alone meaning "done". Once a pointer is configured the
  /// answer must say it: an answer without a boolean there is a failure, never a
  /// success by default.
  public struct AnswerPointers: Sendable {
    /// A boolean: whether the backend follows after the call.
    public var following: JSONPointer?
    /// A boolean: true (with `following` false) when the backend holds a follow
    /// request awaiting approval.
    public var requested: JSONPointer?

    public init(following: JSONPointer? = nil, requested: JSONPointer? = nil) {
      self.following = following
      self.requested = requested
    }

    public var isEmpty: Bool { following == nil && requested == nil }
  }
}

extension Field {
  /// A follow or unfollow endpoint, with the pointers that read its answer.
  func mutationEndpoint(placeholders: Set<String>, meanings: StatusMeanings, also: [String] = [])
    throws(RESTConfigurationError) -> RESTConfiguration.Endpoint
  {
    try allow(Field.endpointKeys + ["following", "requested"] + also)
    var endpoint = try endpointFields(placeholders: placeholders, meanings: meanings).endpoint
    endpoint.answer = try answerPointers()
    return endpoint
  }

  /// `following` and `requested`, each a JSON Pointer to a boolean, when present.
  func answerPointers() throws(RESTConfigurationError) -> RESTConfiguration.AnswerPointers {
    RESTConfiguration.AnswerPointers(
      following: try optional("following")?.pointer(), requested: try optional("requested")?.pointer())
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
