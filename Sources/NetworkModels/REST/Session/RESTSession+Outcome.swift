import HTTP
import JSON

/// How any answer's status reads: a failure (and of what sort), a meaning the
/// endpoint names, or a success for the reader of its body.
extension RESTSession {
  /// A transport error or a status the endpoint gives no meaning to becomes a
  /// failure; a status it names goes to `meaning`, a 2xx to `success`. The
  /// configuration only gives an endpoint meanings its `meaning` can answer, and
  /// details and lists none (they pass no `meaning`), so no configured status fails.
  static func outcome<T>(
    _ result: Result<HTTPResponse, HTTPError>, _ endpoint: RESTConfiguration.Endpoint,
    forbidden: RESTConfiguration.Forbidden = .standard,
    meaning: ((RESTConfiguration.StatusMeaning) -> Result<T, FollowFailure>)? = nil,
    success: (HTTPResponse) -> Result<T, FollowFailure>
  ) -> Result<T, FollowFailure> {
    switch result {
    case .failure(let error):
      return .failure(FollowFailure(.unavailable, error.message))
    case .success(let response):
      // Errors in a 2xx come first: a status meaning must not confirm what the answer refuses.
      if let errors = endpoint.errors, (200...299).contains(response.status),
        let failure = answerErrors(response, endpoint, errors, forbidden: forbidden)
      {
        return .failure(failure)
      }
      if let named = endpoint.meaning(of: response) {
        if named == .retry { return .failure(Self.failure(response, endpoint, rateLimited: true)) }
        if let meaning { return meaning(named) }
      }
      if (200...299).contains(response.status) { return success(response) }
      return .failure(Self.failure(response, endpoint, forbidden: forbidden))
    }
  }

  /// A 403 is a refusal or waits for credentials as `forbidden` says (an `onStatus`
  /// meaning of it, a rate limit, came first).
  static func failure(
    _ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint, rateLimited: Bool = false,
    forbidden: RESTConfiguration.Forbidden = .standard
  ) -> FollowFailure {
    let status = response.status
    let call = "HTTP \(status) from \(endpoint.method) \(endpoint.path)" + (rateLimited ? " (rate limited)" : "")
    // Most APIs say why in {"error": "..."} or {"message": "..."}: worth showing a user.
    var reason: String?
    if let json = try? JSON.parse(response.body),
      let said = json["error"]?.string ?? json["message"]?.string ?? json["error"]?["message"]?.string,
      !said.isEmpty
    {
      reason = said
    }
    func message(_ reason: String?) -> String { call + (reason.map { ": " + String($0.prefix(200)) } ?? "") }
    if rateLimited { return FollowFailure(.unavailable, message(reason), retryAfter: response.retryAfter) }
    if status == 403, let refusal = forbidden.refusal(in: response) {
      // The message that made it a refusal (read where `forbidden` says), else the usual one.
      return FollowFailure(.rejected(status: status), message(refusal.isEmpty ? reason : refusal))
    }
    switch status {
    case 401, 403: return FollowFailure(.unauthorized(status: status), message(reason))
    case 408, 429, 500...599: return FollowFailure(.unavailable, message(reason), retryAfter: response.retryAfter)
    default: return FollowFailure(.rejected(status: status), message(reason))
    }
  }
}
