/// Why a request's value cannot be used: the param at fault, as a JSON Pointer
/// relative to the request's params (`/id`, `/params/gene`), and the reason.
public struct PlaceholderProblem: Error, Sendable, Equatable {
  public var path: String
  public var reason: String

  public init(path: String, reason: String) {
    self.path = path
    self.reason = reason
  }
}

/// A backend that puts ids and list params into URL paths: it says, before anything
/// is sent, which values could not reach the server as the path segment they were
/// meant to be, so the service refuses them (-32602) with no state change at all.
public protocol PlaceholderValidating: AnyObject {
  /// Checks `id` against every endpoint of `kind`: an id that one of them could not
  /// send would leave an entity that can be followed but not unfollowed.
  func validatePlaceholders(kind: String, id: String) -> PlaceholderProblem?
  /// Checks a list's params against its endpoint.
  func validatePlaceholders(list: String, params: [String: String]) -> PlaceholderProblem?
}
