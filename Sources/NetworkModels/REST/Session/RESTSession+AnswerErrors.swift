import HTTP
import JSON

/// Errors inside a successful answer: a GraphQL server answers 200 with
/// `{"errors": [...], "data": null}` when a mutation fails.
extension RESTSession {
  /// The failure a 2xx answer states at `rule.pointer`, or nil when it states none (no
  /// value there, null, or an empty array, or a 204 with no content). Any other answer
  /// that is not JSON cannot say it has no errors: it fails too.
  ///
  /// An error is a refusal (rolled back) unless it says which HTTP status it stands for
  /// at `rule.status`: the GraphQL spec gives errors no retryable marker (§7.1.4,
  /// https://spec.graphql.org/October2021/#sec-Errors); each server has its own
  /// (metaphysics: `extensions.httpStatusCodes`). An error standing for a 403 is a
  /// refusal or waits for credentials as `forbidden` says, judged by the error's message.
  static func answerErrors(
    _ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint, _ rule: RESTConfiguration.ErrorsRule,
    forbidden: RESTConfiguration.Forbidden = .standard
  ) -> FollowFailure? {
    // 204 and 205 have no content by definition (RFC 9110 §15.3.5, §15.3.6): no errors either.
    if response.status == 204 || response.status == 205 { return nil }
    let call = "\(endpoint.method) \(endpoint.path)"
    guard let json = try? JSON.parse(response.body) else {
      return FollowFailure(
        .unavailable, "the answer of \(call) is not JSON: whether it has errors at \(rule.pointer) is unknown")
    }
    guard let errors = json.value(at: rule.pointer) else { return nil }
    switch errors.kind {
    case .null: return nil
    case .array where errors.count == 0: return nil
    default: break
    }
    let first = errors.kind == .array ? errors.elements[0] : errors
    let text = first.string ?? first["message"]?.string ?? String(decoding: first.encoded(), as: UTF8.self)
    var status = response.status
    if let pointer = rule.status, let stated = first.value(at: pointer)?.integer, (100...599).contains(stated) {
      status = Int(stated)
    }
    let message = "\(call) answered with errors at \(rule.pointer): " + String(text.prefix(200))
    if status == 403, forbidden.refuses(message: text) {
      return FollowFailure(.rejected(status: status), message)
    }
    switch status {
    case 401, 403: return FollowFailure(.unauthorized(status: status), message)
    case 408, 429, 500...599: return FollowFailure(.unavailable, message)
    default: return FollowFailure(.rejected(status: status), message)
    }
  }
}
