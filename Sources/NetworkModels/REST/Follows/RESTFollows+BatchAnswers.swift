import HTTP
import JSON

/// How a batched state answer is read: the followed subset (with values captured
/// from each item), or a boolean per id asked, by position.
extension RESTFollows {
  func followedIDs(
    in response: HTTPResponse, _ batch: RESTConfiguration.Batch, asked: [String], kind: String,
    capture: [RESTConfiguration.Capture]
  ) -> Result<Set<ExactString>, FollowFailure> {
    switch batch.by {
    case .position:
      return Self.followedByPosition(in: response, batch, asked: asked)
    case .subset where capture.isEmpty:
      return Self.followedIDs(in: response, batch)
    case .subset:
      guard let json = try? JSON.parse(response.body), let items = json.value(at: batch.items), items.isArray else {
        return .failure(FollowFailure(.unavailable, "the batched state answer has no array at \(batch.items)"))
      }
      var ids = Set<ExactString>()
      for item in items.elements {
        guard let id = item.value(at: batch.id).flatMap({ $0.string ?? $0.integer.map { String($0) } }) else {
          continue
        }
        ids.insert(ExactString(id))
        session.captureFromState(EntityKey(kind: kind, id: id), capture, item)
      }
      return .success(ids)
    }
  }

  /// `[true, false, true]` for ids a, b, c (Spotify's "check if user follows"): an
  /// answer of another length, or with anything but booleans, says nothing sure of
  /// any id, so it fails them all.
  static func followedByPosition(in response: HTTPResponse, _ batch: RESTConfiguration.Batch, asked: [String])
    -> Result<Set<ExactString>, FollowFailure>
  {
    guard let json = try? JSON.parse(response.body), let items = json.value(at: batch.items), items.isArray else {
      return .failure(FollowFailure(.unavailable, "the batched state answer has no array at \(batch.items)"))
    }
    let flags = items.elements.map(\.bool)
    guard flags.count == asked.count else {
      return .failure(
        FollowFailure(
          .unavailable, "the batched state answer has \(flags.count) entries at \(batch.items) for \(asked.count) ids"))
    }
    var ids = Set<ExactString>()
    for (id, flag) in zip(asked, flags) {
      guard let flag else {
        return .failure(
          FollowFailure(
            .unavailable, "the batched state answer at \(batch.items) has an entry that is not true or false"))
      }
      if flag { ids.insert(ExactString(id)) }
    }
    return .success(ids)
  }

  /// Each id's answer from a batched read: from its own item when the batch reads flags
  /// per item, else from the followed subset. A status meaning answers for every id of
  /// the call: Artsy's batched check answers 404 when none of them is followed (see
  /// examples/artsy/ENDPOINTS.md).
  func batchOutcome(
    _ result: Result<HTTPResponse, HTTPError>, _ state: RESTConfiguration.Endpoint, _ batch: RESTConfiguration.Batch,
    ids: [String], kind: String
  ) -> (String) -> Result<FollowAnswer, FollowFailure> {
    if batch.flags.following != nil {
      let answers = session.answer(
        result, state,
        meaning: { meaning in
          .success(
            Dictionary(
              ids.map { (ExactString($0), .success(FollowAnswer(meaning == .following))) },
              uniquingKeysWith: { first, _ in first }))
        }
      ) { response in
        let answers = Self.batchAnswers(response, batch, ids: ids)
        if !state.capture.isEmpty {
          self.captureFromItems(response, batch, answers, kind: kind, capture: state.capture)
        }
        return .success(answers)
      }
      return { id in
        answers.flatMap { $0[ExactString(id)] ?? .failure(FollowFailure(.unavailable, "no answer for id \(id)")) }
      }
    }
    let followed = session.answer(
      result, state, meaning: { $0 == .following ? .success(Set(ids.map(ExactString.init))) : .success([]) }
    ) {
      response in self.followedIDs(in: response, batch, asked: ids, kind: kind, capture: state.capture)
    }
    return { id in followed.map { FollowAnswer($0.contains(ExactString(id))) } }
  }

  /// Values captured from the items of a batch answered with a flag per item: only
  /// from those that say following (what they name exists only then).
  private func captureFromItems(
    _ response: HTTPResponse, _ batch: RESTConfiguration.Batch,
    _ answers: [ExactString: Result<FollowAnswer, FollowFailure>],
    kind: String, capture: [RESTConfiguration.Capture]
  ) {
    guard let json = try? JSON.parse(response.body), let items = json.value(at: batch.items), items.isArray else {
      return
    }
    for item in items.elements {
      guard let id = item.value(at: batch.id).flatMap({ $0.string ?? $0.integer.map { String($0) } }),
        case .success(.following)? = answers[ExactString(id)]
      else { continue }
      session.captureFromState(EntityKey(kind: kind, id: id), capture, item)
    }
  }
}
