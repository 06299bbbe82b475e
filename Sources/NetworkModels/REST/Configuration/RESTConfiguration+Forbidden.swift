import HTTP
import JSON

extension RESTConfiguration {
  /// What a 403 means (`forbidden`): the credentials judged (wait for others, as a
  /// 401) or the request refused (roll back, with the API's message). RFC 9110 §15.5.4
  /// lets a 403 be either: "the server understood the request but refuses to fulfill
  /// it", with or without credentials at fault. Mastodon answers following yourself
  /// 403 `{"error": "This action is not allowed"}`, and a token without the scope 403
  /// `{"error": "This action is outside the authorized scopes"}`; GitHub a spent rate
  /// limit 403 (an `onStatus` rule, read before this).
  public enum Forbidden: Sendable {
    /// Every 403 waits for credentials.
    case credentials
    /// Every 403 is a refusal.
    case refusal
    /// A 403 whose JSON body has a non-empty string at one of `messages` is a refusal
    /// with that message, unless the message names credentials (contains one of
    /// `credentialWords`, ASCII letters compared without case); any other 403 waits
    /// for credentials.
    case byMessage(messages: [JSONPointer], credentialWords: [String])

    /// Mastodon's (and Rails') `{"error": "…"}`; the words of the messages that are
    /// about the token or the sign-in. GitHub's `{"message": …}` is not read: its 403s
    /// are rate limits and token permissions.
    public static let standard = Forbidden.byMessage(
      messages: [JSONPointer("/error")!],
      credentialWords: [
        "scope", "token", "credential", "authoriz", "authoris", "authenticat", "login", "log in", "sign in",
        "signed in",
      ])

    /// The API's message when `response` (a 403) refuses the request rather than the
    /// credentials, "" for a refusal without one; nil when it waits for credentials.
    func refusal(in response: HTTPResponse) -> String? {
      switch self {
      case .credentials: return nil
      case .refusal: return ""
      case .byMessage(let messages, let words):
        guard let json = try? JSON.parse(response.body) else { return nil }
        for pointer in messages {
          guard let text = json.value(at: pointer)?.string, !text.isEmpty else { continue }
          let lowered = Self.asciiLowercased(text)
          return words.contains(where: { lowered.containsBytes(of: $0) }) ? nil : text
        }
        return nil
      }
    }

    /// Whether a 403 that says `message` (a GraphQL error's, read by the endpoint's
    /// `errors`) refuses the request rather than the credentials.
    func refuses(message: String) -> Bool {
      switch self {
      case .credentials: return false
      case .refusal: return true
      case .byMessage(_, let words):
        let lowered = Self.asciiLowercased(message)
        return !message.isEmpty && !words.contains(where: { lowered.containsBytes(of: $0) })
      }
    }

    /// `text` with A–Z as a–z and every other byte as it is (no Unicode case rules:
    /// the words are ASCII).
    static func asciiLowercased(_ text: String) -> String {
      String(
        decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
  }
}

extension Field {
  /// `"credentials"`, `"refusal"`, or `{"messages": [pointer, …], "credentialWords": [word, …]}`
  /// (each optional, the standard one's by default).
  func forbidden() throws(RESTConfigurationError) -> RESTConfiguration.Forbidden {
    if json.kind == .string {
      switch try string() {
      case "credentials": return .credentials
      case "refusal": return .refusal
      default: throw error("must be \"credentials\", \"refusal\" or {\"messages\": […], \"credentialWords\": […]}")
      }
    }
    guard json.kind == .object else {
      throw error("must be \"credentials\", \"refusal\" or {\"messages\": […], \"credentialWords\": […]}")
    }
    try allow(["messages", "credentialWords"])
    guard case .byMessage(var messages, var words) = RESTConfiguration.Forbidden.standard else { return .standard }
    if let field = optional("messages") {
      guard field.json.isArray, field.json.count > 0 else {
        throw field.error("must list at least one JSON Pointer to the answer's message")
      }
      messages = []
      for element in field.elements { messages.append(try element.pointer()) }
    }
    if let field = optional("credentialWords") {
      guard field.json.isArray else { throw field.error("must be an array of words (none: [])") }
      words = []
      for element in field.elements {
        let word = try element.checkNoLineBreaks(try element.string())
        guard !word.isEmpty else { throw element.error("must not be empty (every message contains \"\")") }
        guard word.utf8.allSatisfy({ $0 < 0x80 }) else {
          throw element.error("must be ASCII: it is compared without case, A–Z as a–z only")
        }
        words.append(RESTConfiguration.Forbidden.asciiLowercased(word))
      }
    }
    return .byMessage(messages: messages, credentialWords: words)
  }
}
