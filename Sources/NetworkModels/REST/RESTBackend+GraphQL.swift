import HTTP
import JSON

/// Errors inside a successful answer: a GraphQL server answers 200 with
/// `{"errors": [...], "data": null}` when a mutation fails.
extension RESTBackend {
  /// The failure a 2xx answer states at `pointer`, or nil when it states none (no
  /// value there, null, or an empty array, or a 204 with no content). Any other answer
  /// that is not JSON cannot say it has no errors: it fails too.
  ///
  /// Every error is a refusal (rolled back): the GraphQL spec gives errors no
  /// retryable marker (§7.1.4, https://spec.graphql.org/October2021/#sec-Errors;
  /// `extensions.code` values are each server's own), and a server that cannot answer
  /// at all says so with a 5xx.
  static func answerErrors(_ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint, _ pointer: JSONPointer)
    -> FollowFailure?
  {
    // 204 and 205 have no content by definition (RFC 9110 §15.3.5, §15.3.6): no errors either.
    if response.status == 204 || response.status == 205 { return nil }
    let call = "\(endpoint.method) \(endpoint.path)"
    guard let json = try? JSON.parse(response.body) else {
      return FollowFailure(
        .unavailable, "the answer of \(call) is not JSON: whether it has errors at \(pointer) is unknown")
    }
    guard let errors = json.value(at: pointer) else { return nil }
    switch errors.kind {
    case .null: return nil
    case .array where errors.count == 0: return nil
    default: break
    }
    let first = errors.kind == .array ? errors.elements[0] : errors
    let text = first.string ?? first["message"]?.string ?? String(decoding: first.encoded(), as: UTF8.self)
    return FollowFailure(
      .rejected(status: response.status), "\(call) answered with errors at \(pointer): " + String(text.prefix(200)))
  }
}
