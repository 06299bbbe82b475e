import HTTP
import JSON

/// How a batched state answer is read: the followed subset (with values captured
/// from each item), or a boolean per id asked, by position.
extension RESTBackend {
  func followedIDs(
    in response: HTTPResponse, _ batch: RESTConfiguration.Batch, asked: [String], kind: String,
    capture: [(name: String, pointer: JSONPointer)]
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
        captureFromState(EntityKey(kind: kind, id: id), capture, item)
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

  /// Ids joined into one JSON string are sent as they are: an id holding the separator
  /// would read as two, so it is refused before anything changes or is sent (what
  /// cannot be read is not followed either). In a query or form each id is
  /// percent-encoded, so the separator inside one is escaped.
  func joinProblem(kind: String, id: String) -> PlaceholderProblem? {
    guard joinsIDsInJSON, let read = stateRead(kind), let join = read.state.batch?.join,
      case .json = read.state.endpoint.body,
      id.containsBytes(of: join)
    else { return nil }
    return PlaceholderProblem(
      path: "/id",
      reason: "id must not contain \"\(join)\": the batched state read joins the ids with it in one JSON string")
  }
}
