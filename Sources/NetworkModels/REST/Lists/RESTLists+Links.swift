/// RFC 8288 Link headers (`rel="next"`) and the origin the next page must stay on.
extension RESTLists {
  /// The URL of `rel="next"` in an RFC 8288 Link header: `<URL>; rel="next"` entries
  /// separated by commas (a URL may hold commas: it ends at its `>`); `rel` may list
  /// several relations. A relative URL is resolved against `base`.
  public static func nextLink(_ header: String, base: String = "") -> String? {
    var rest = Substring(header)
    while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
      let target = String(rest[rest.index(after: open)..<close])
      let parametersEnd = rest[close...].firstIndex(of: "<") ?? rest.endIndex
      let parameters = rest[rest.index(after: close)..<parametersEnd]
      rest = rest[parametersEnd...]
      for parameter in parameters.split(separator: ";") {
        let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: " ,\t\"") }
        guard pair.count == 2, pair[0].lowercased() == "rel" else { continue }
        if pair[1].split(separator: " ").contains(where: { $0.lowercased() == "next" }) {
          return resolve(target, against: base)
        }
      }
    }
    return nil
  }

  /// An absolute URL as it is; `/path` on the base's origin; anything else after the
  /// base's last `/`.
  static func resolve(_ reference: String, against base: String) -> String {
    if reference.hasPrefix("http://") || reference.hasPrefix("https://") || base.isEmpty { return reference }
    let schemeEnd = afterScheme(base)
    let originEnd = base[schemeEnd...].firstIndex(of: "/") ?? base.endIndex
    if reference.hasPrefix("/") { return String(base[..<originEnd]) + reference }
    let folderEnd = base[originEnd...].lastIndex(of: "/").map { base.index(after: $0) } ?? base.endIndex
    return String(base[..<folderEnd]) + (folderEnd == base.endIndex && !base.hasSuffix("/") ? "/" : "") + reference
  }

  /// Where the host starts: after `scheme://` (the start when there is none).
  static func afterScheme(_ text: String) -> String.Index {
    var index = text.startIndex
    while index < text.endIndex {
      if text[index...].hasPrefix("://") { return text.index(index, offsetBy: 3) }
      index = text.index(after: index)
    }
    return text.startIndex
  }

  /// Whether `url` is on the origin of `base` (scheme, host and port): the auth header
  /// must not follow a Link to another host.
  static func sameOrigin(_ url: String, _ base: String) -> Bool {
    func origin(_ text: String) -> Substring {
      let schemeEnd = afterScheme(text)
      return text[..<(text[schemeEnd...].firstIndex(of: "/") ?? text.endIndex)]
    }
    return origin(url).lowercased() == origin(base).lowercased()
  }
}

extension StringProtocol {
  fileprivate func trimmingCharacters(in characters: String) -> String {
    var slice = Substring(self)
    while let first = slice.first, characters.contains(first) { slice.removeFirst() }
    while let last = slice.last, characters.contains(last) { slice.removeLast() }
    return String(slice)
  }
}
