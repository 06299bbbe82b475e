import HTTP
import JSON

/// Answers that state the follow state (Mastodon's Relationship): a mutation's result,
/// a single read's `requested`, and a batch with one flag per id asked.
extension RESTFollows {
  /// What a 2xx answer to a follow (`following` true) or unfollow says the backend
  /// holds now. Without pointers the status alone means done; with them the answer
  /// must say it, and a result other than the one asked for is a failure: a follow
  /// answered `requested` settles as a request, never as a follow.
  static func mutationAnswer(
    _ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint, following wanted: Bool
  ) -> Result<FollowAnswer, FollowFailure> {
    let pointers = endpoint.answer
    guard !pointers.isEmpty else { return .success(FollowAnswer(wanted)) }
    let call = "HTTP \(response.status) from \(endpoint.method) \(endpoint.path)"
    let json = try? JSON.parse(response.body)
    func flag(_ pointer: JSONPointer?) -> Result<Bool?, FollowFailure> {
      guard let pointer else { return .success(nil) }
      guard let value = json?.value(at: pointer)?.bool else {
        return .failure(FollowFailure(.unavailable, "\(call): the answer has no true or false at \(pointer)"))
      }
      return .success(value)
    }
    let following: Bool?
    let requested: Bool?
    let stated: Result<Bool?, FollowFailure> =
      pointers.followingTest != nil ? .success(pointers.isFollowing(in: json)) : flag(pointers.following)
    switch (stated, flag(pointers.requested)) {
    case (.failure(let failure), _), (_, .failure(let failure)): return .failure(failure)
    case (.success(let first), .success(let second)):
      following = first
      requested = second
    }
    let answer: FollowAnswer
    switch (following, requested) {
    case (true?, _): answer = .following
    case (_, true?): answer = .requested
    case (false?, _): answer = .notFollowing
    // Only `requested` is configured, and it is false: the status says done.
    case (nil, _): answer = FollowAnswer(wanted)
    }
    switch (wanted, answer) {
    case (true, .following), (true, .requested), (false, .notFollowing):
      return .success(answer)
    case (true, .notFollowing):
      return .failure(FollowFailure(.rejected(status: response.status), "\(call): the server did not follow"))
    case (false, .following):
      return .failure(FollowFailure(.rejected(status: response.status), "\(call): the server still follows"))
    case (false, .requested):
      return .failure(
        FollowFailure(.rejected(status: response.status), "\(call): the follow request is still awaiting approval"))
    }
  }

  /// A single read's answer: `following` as the state rule reads it, and when it
  /// says not following, a `requested` pointer (if configured) tells a request apart.
  static func stateAnswer(_ response: HTTPResponse, _ state: RESTConfiguration.StateEndpoint) -> Result<
    FollowAnswer, FollowFailure
  > {
    following(in: response, state.following).flatMap { following in
      guard !following, let pointer = state.requested else { return .success(FollowAnswer(following)) }
      guard let json = try? JSON.parse(response.body), let requested = json.value(at: pointer)?.bool else {
        return .failure(FollowFailure(.unavailable, "the state answer has no true or false at \(pointer)"))
      }
      return .success(requested ? .requested : .notFollowing)
    }
  }

  /// A batched answer with one item per id asked, matched by id (not by order). An id
  /// the answer leaves out gets a failure: the answer does not say it is not followed.
  static func batchAnswers(_ response: HTTPResponse, _ batch: RESTConfiguration.Batch, ids: [String])
    -> [ExactString: Result<FollowAnswer, FollowFailure>]
  {
    guard let json = try? JSON.parse(response.body), let items = json.value(at: batch.items), items.isArray else {
      let failure = FollowFailure(.unavailable, "the batched state answer has no array at \(batch.items)")
      return Dictionary(ids.map { (ExactString($0), .failure(failure)) }, uniquingKeysWith: { first, _ in first })
    }
    var answers: [ExactString: Result<FollowAnswer, FollowFailure>] = [:]
    for item in items.elements {
      guard let value = item.value(at: batch.id), let id = value.string ?? value.integer.map({ String($0) }) else {
        continue
      }
      answers[ExactString(id)] = itemAnswer(item, batch.flags, id: id)
    }
    for id in ids where answers[ExactString(id)] == nil {
      answers[ExactString(id)] = .failure(
        FollowFailure(.rejected(status: response.status), "the batched state answer has no item for id \(id)"))
    }
    return answers
  }

  private static func itemAnswer(_ item: JSON, _ flags: RESTConfiguration.AnswerPointers, id: String) -> Result<
    FollowAnswer, FollowFailure
  > {
    guard let following = flags.isFollowing(in: item) else {
      let place = flags.following.map { "\($0)" } ?? ""
      return .failure(
        FollowFailure(.unavailable, "the batched state item of id \(id) has no true or false at \(place)"))
    }
    if following { return .success(.following) }
    guard let requestedPointer = flags.requested else { return .success(.notFollowing) }
    guard let requested = item.value(at: requestedPointer)?.bool else {
      return .failure(
        FollowFailure(.unavailable, "the batched state item of id \(id) has no true or false at \(requestedPointer)"))
    }
    return .success(requested ? .requested : .notFollowing)
  }
}
