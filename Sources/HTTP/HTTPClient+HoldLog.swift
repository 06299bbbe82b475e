import Posix

/// A rate-limit hold is one line when it starts and one when it ends, however many
/// requests it holds (docs/operations.md "Logs").
extension HTTPClient {
  /// Response headers that say why: `Retry-After` and the `…RateLimit…` family.
  static func explainsHold(_ name: String) -> Bool {
    let lowered = name.lowercased()
    return lowered == "retry-after" || lowered.contains("ratelimit") || lowered.contains("rate-limit")
  }

  func logHold(for wait: Duration) {
    guard Log.isEnabled(.warn) else { return }
    let milliseconds = Int((wait / .milliseconds(1)).rounded(.up))
    var fields: [Log.Field] = []
    if let (request, response) = deliveringAnswer {
      fields.append(Log.Field("api", Self.origin(request.url)))
      fields.append(Log.Field("status", response.status))
      let said = response.headers.filter { Self.explainsHold($0.name) }.prefix(6)
      fields.append(
        Log.Field(
          "why",
          said.isEmpty
            ? "no header (the rule's waitMs)" : said.map { "\($0.name): \($0.value)" }.joined(separator: ", ")))
    }
    fields.append(Log.Field("until", Log.timestamp(Process.wallClockSeconds() + Double(milliseconds) / 1000)))
    fields.append(Log.Field("ms", milliseconds))
    Log.event(.warn, "ratelimit.hold", "the API asked for a pause: every request to it waits", fields)
  }

  /// `scheme://host:port` of `url`, without what may carry a secret (user info, path, query).
  static func origin(_ url: String) -> String {
    let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
    guard parts.count >= 3, parts[0].hasSuffix(":"), parts[1].isEmpty else { return "" }
    let authority = parts[2].prefix { $0 != "?" && $0 != "#" }
    let host = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
    return "\(parts[0])//\(host)"
  }
}
