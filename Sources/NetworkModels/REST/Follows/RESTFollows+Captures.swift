import HTTP
import JSON

/// An unfollow whose request takes values captured from earlier answers (YouTube's
/// subscription id; the values themselves: RESTSession+Captures).
extension RESTFollows {
  /// An unfollow whose request needs captured values: with them held it goes out;
  /// without (a follow made elsewhere, a lost state folder) the state is read first,
  /// which captures them, or says the unfollow is already done.
  func unfollowWithCaptures(
    _ key: EntityKey, _ kind: RESTConfiguration.KindEndpoints, _ completion: @escaping Completion
  ) {
    if kind.unfollowNeeds.isSubset(of: session.capturedValues.values(of: key, in: session.environment).keys) {
      return sendUnfollow(key, kind, completion)
    }
    fetchFollowing(key) { [weak self] result in
      guard let self else { return }
      switch result {
      case .failure, .success(.notFollowing):
        completion(result)
      case .success(.following), .success(.requested):
        let missing = kind.unfollowNeeds.subtracting(
          self.session.capturedValues.values(of: key, in: self.session.environment).keys)
        guard missing.isEmpty else {
          let names = missing.sorted().map { "{\($0)}" }.joined(separator: ", ")
          let why = self.session.lastCaptureMiss[key].map { " (\($0))" } ?? ""
          let message =
            "the unfollow of \(key) needs \(names): the state read says following but did not give it\(why)"
          return completion(.failure(FollowFailure(.rejected(status: 0), message)))
        }
        self.sendUnfollow(key, kind, completion)
      }
    }
  }

  private func sendUnfollow(
    _ key: EntityKey, _ kind: RESTConfiguration.KindEndpoints, _ completion: @escaping Completion
  ) {
    var values = session.capturedValues.values(of: key, in: session.environment)
    values["kind"] = key.kind
    values["id"] = key.id
    // A captured value fills the path like an id: one made of dots would call another resource.
    if let (name, reason) = Template.pathProblem(kind.unfollow.path, values) {
      let message = "the value captured as {\(name)} for \(key) " + reason
      return session.loop.execute { completion(.failure(FollowFailure(.rejected(status: 0), message))) }
    }
    sendChange(kind.unfollow, key, false, session.request(kind.unfollow, values: values), completion)
  }
}
