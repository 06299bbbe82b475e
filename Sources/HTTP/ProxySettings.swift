import Posix

/// Which proxy a request goes through, decided here rather than by libcurl: a proxy is
/// a hop the auth header travels through, and over plain http:// it reads it.
///
/// Honoured, read once at start, an empty value as unset, in libcurl's order:
/// `no_proxy`/`NO_PROXY` (hosts that go direct), `http_proxy` for http:// (never
/// `HTTP_PROXY`: CGI servers set that from a request's `Proxy:` header), `https_proxy`/
/// `HTTPS_PROXY` for https://, then `all_proxy`/`ALL_PROXY` for either. Requests to a
/// loopback host (`localhost`, `127.x.y.z`, `[::1]`) always go direct: they never leave
/// the machine, and a proxy there would only be one more hop. A request carrying the
/// auth token over http:// through a proxy that is not loopback is not sent.
public struct ProxySettings: Sendable, Equatable {
  /// A proxy and the variable that named it (said in messages, never its user info).
  public struct Proxy: Sendable, Equatable {
    public var url: String
    public var variable: String

    public init(url: String, variable: String) {
      self.url = url
      self.variable = variable
    }
  }

  public var http: Proxy?
  public var https: Proxy?
  public var all: Proxy?
  /// `no_proxy`'s entries, lower case, without a leading dot; "*" is every host.
  /// Names, addresses and CIDR ranges (see `bypasses`).
  public var noProxy: [String]

  public init(http: Proxy? = nil, https: Proxy? = nil, all: Proxy? = nil, noProxy: [String] = []) {
    self.http = http
    self.https = https
    self.all = all
    self.noProxy = noProxy
  }

  /// From variables as `environment` reads them (the process's, or a test's own).
  public init(environment: (String) -> String?) {
    func first(_ names: String...) -> Proxy? {
      for name in names {
        if let value = environment(name), !value.isEmpty { return Proxy(url: value, variable: name) }
      }
      return nil
    }
    http = first("http_proxy")
    https = first("https_proxy", "HTTPS_PROXY")
    all = first("all_proxy", "ALL_PROXY")
    let list = first("no_proxy", "NO_PROXY")?.url ?? ""
    noProxy = list.split(separator: ",").compactMap { entry in
      var name = Substring(String(entry).trimmingSpaces.lowercased())
      while name.hasPrefix(".") { name = name.dropFirst() }
      while name.hasSuffix(".") { name = name.dropLast() }
      return name.isEmpty ? nil : String(name)
    }
  }

  /// The process's: its environment does not change after start.
  public static let process = ProxySettings(environment: Process.environment)

  /// Whether no proxy is named at all (the usual case: nothing to decide per request).
  public var isEmpty: Bool { http == nil && https == nil && all == nil }

  public enum Route: Sendable, Equatable {
    case direct
    case through(Proxy)
    /// Not sent, and why (a sentence to follow "not sent: ").
    case refused(String)

    var proxyVariable: String? {
      guard case .through(let proxy) = self else { return nil }
      return proxy.variable
    }
  }

  /// Where a request to `url` goes.
  public func route(_ url: String, carriesCredentials: Bool) -> Route {
    guard !isEmpty, let target = URLParts(url) else { return .direct }
    if LoopbackHost.contains(target.host) || bypasses(target.host) { return .direct }
    let plain = target.scheme == "http"
    guard let proxy = (plain ? http : target.scheme == "https" ? https : nil) ?? all else { return .direct }
    if plain && carriesCredentials {
      let hop = URLParts(proxy.url.contains("://") ? proxy.url : "http://" + proxy.url)
      if !(hop.map { LoopbackHost.contains($0.host) } ?? false) {
        return .refused(
          "the auth token would go over plain http:// through a proxy that is not loopback "
            + "(\(hop?.hostAndPort ?? "?"), from \(proxy.variable)), where anyone on the way reads it; use https://, "
            + "a loopback proxy, or name \(target.host) in no_proxy")
      }
    }
    return .through(proxy)
  }

  /// `no_proxy`: a name matches itself and the names under it (`example.com` matches
  /// `api.example.com`), case aside; an address matches itself, or a range of them in
  /// CIDR notation (`10.0.0.0/8`, `fd00::/8`), as libcurl matches them.
  private func bypasses(_ host: String) -> Bool {
    let host = host.lowercased()
    let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    let address = IPAddress(bare)
    return noProxy.contains { entry in
      // By bytes, as the host is sent: `String` equality would take canonically
      // equivalent names for one.
      let name = Array(entry.utf8)
      if name == Array("*".utf8) || host.utf8.elementsEqual(name) || bare.utf8.elementsEqual(name)
        || (host.utf8.count > name.count && host.utf8.reversed().starts(with: ([UInt8(ascii: ".")] + name).reversed()))
      {
        return true
      }
      guard let address, let slash = entry.firstIndex(of: "/"), let bits = Int(entry[entry.index(after: slash)...]),
        let network = IPAddress(String(entry[..<slash]))
      else { return false }
      return address.isIn(network, prefixBits: bits)
    }
  }
}

/// An IPv4 or IPv6 address's bytes, for `no_proxy`'s ranges.
struct IPAddress {
  var bytes: [UInt8]

  init?(_ text: String) {
    let text = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
    guard let bytes = InternetAddress.bytes(of: text) else { return nil }
    self.bytes = bytes
  }

  /// Whether the first `prefixBits` bits are `network`'s (of the same family).
  func isIn(_ network: IPAddress, prefixBits: Int) -> Bool {
    guard bytes.count == network.bytes.count, (0...bytes.count * 8).contains(prefixBits) else { return false }
    for index in 0..<bytes.count {
      let bits = min(8, max(0, prefixBits - index * 8))
      let mask: UInt8 = bits == 0 ? 0 : ~UInt8(0) << (8 - bits)
      if bytes[index] & mask != network.bytes[index] & mask { return false }
    }
    return true
  }
}

/// `localhost`, `127.x.y.z` or `[::1]`, as written (the rule environments follow too):
/// another name for this machine is not trusted to be one.
enum LoopbackHost {
  static func contains(_ host: String) -> Bool {
    if host == "localhost" || host == "[::1]" { return true }
    let parts = host.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    return parts.count == 4 && host.hasPrefix("127.")
      && parts.dropFirst().allSatisfy { (1...3).contains($0.count) && $0.allSatisfy(isDigit) }
  }

  private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}

/// A URL's scheme (lower case) and host (as written, brackets kept), and its authority
/// without user info: only what routing needs.
struct URLParts {
  var scheme: String
  var host: String
  var hostAndPort: String

  init?(_ url: String) {
    guard let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")),
      url.utf8[colon...].starts(with: "://".utf8)
    else { return nil }
    scheme = String(decoding: url.utf8[..<colon], as: UTF8.self).lowercased()
    let rest = url.utf8[url.utf8.index(colon, offsetBy: 3)...]
    var authority = rest.prefix { !"/?#".utf8.contains($0) }
    if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[authority.index(after: at)...] }
    let hostEnd =
      authority.first == UInt8(ascii: "[")
      ? authority.firstIndex(of: UInt8(ascii: "]")).map { authority.index(after: $0) } ?? authority.endIndex
      : authority.firstIndex(of: UInt8(ascii: ":")) ?? authority.endIndex
    host = String(decoding: authority[..<hostEnd], as: UTF8.self)
    hostAndPort = String(decoding: authority, as: UTF8.self)
    guard !host.isEmpty else { return nil }
  }
}
