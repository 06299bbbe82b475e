import HTTP
import Testing

@Suite struct ProxySettingsTests {
  private func settings(_ variables: [String: String]) -> ProxySettings {
    ProxySettings(environment: { variables[$0] })
  }

  @Test func nothingSetIsDirect() {
    let none = settings([:])
    #expect(none.isEmpty)
    #expect(none.route("https://api.example.com/x", carriesCredentials: true) == .direct)
  }

  /// libcurl's order: the scheme's own variable, then all_proxy; `HTTP_PROXY` never
  /// (CGI servers fill it from a request's `Proxy:` header).
  @Test func eachSchemeReadsItsVariablesInLibcurlsOrder() {
    let upper = settings(["HTTP_PROXY": "http://127.0.0.1:1", "HTTPS_PROXY": "http://127.0.0.1:2"])
    #expect(upper.route("http://api.example.com/", carriesCredentials: false) == .direct)
    #expect(
      upper.route("https://api.example.com/", carriesCredentials: true)
        == .through(.init(url: "http://127.0.0.1:2", variable: "HTTPS_PROXY")))
    let both = settings(["https_proxy": "http://127.0.0.1:3", "HTTPS_PROXY": "http://127.0.0.1:2"])
    #expect(both.https?.variable == "https_proxy")
    let all = settings(["ALL_PROXY": "socks5h://127.0.0.1:4", "http_proxy": ""])
    #expect(
      all.route("http://api.example.com/", carriesCredentials: false)
        == .through(.init(url: "socks5h://127.0.0.1:4", variable: "ALL_PROXY")))
  }

  /// Loopback never leaves the machine: no proxy, whatever is set.
  @Test func loopbackHostsGoDirect() {
    let proxied = settings(["http_proxy": "http://proxy.example.com:3128", "all_proxy": "http://proxy.example.com:1"])
    for url in ["http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9/x", "https://127.0.0.1/x"] {
      #expect(proxied.route(url, carriesCredentials: true) == .direct, "\(url)")
    }
    // Another spelling of the address is not taken for loopback.
    #expect(proxied.route("http://127.1:8080/x", carriesCredentials: false) != .direct)
    #expect(proxied.route("http://127.0.0.1.example.com/x", carriesCredentials: false) != .direct)
  }

  @Test func noProxyNamesHostsAndTheirDomains() {
    let proxied = settings(["https_proxy": "http://127.0.0.1:3", "NO_PROXY": " .Example.com, 10.0.0.7,[::2] "])
    #expect(proxied.route("https://api.example.com/x", carriesCredentials: true) == .direct)
    #expect(proxied.route("https://EXAMPLE.com/x", carriesCredentials: true) == .direct)
    #expect(proxied.route("https://10.0.0.7:8443/x", carriesCredentials: true) == .direct)
    #expect(proxied.route("https://[::2]/x", carriesCredentials: true) == .direct)
    #expect(proxied.route("https://notexample.com/x", carriesCredentials: true) != .direct)
    #expect(
      settings(["https_proxy": "p:1", "no_proxy": "*"]).route("https://a.b/", carriesCredentials: true) == .direct)
  }

  @Test func noProxyRangesInCIDRNotation() {
    let proxied = settings(["https_proxy": "http://127.0.0.1:3", "no_proxy": "10.0.0.0/8,192.168.4.0/23,fd00::/8"])
    for url in ["https://10.200.3.4/", "https://192.168.5.255:8443/", "https://[fd12::1]/"] {
      #expect(proxied.route(url, carriesCredentials: true) == .direct, "\(url)")
    }
    for url in ["https://11.0.0.1/", "https://192.168.6.1/", "https://[fe80::1]/", "https://10.example.com/"] {
      #expect(proxied.route(url, carriesCredentials: true) != .direct, "\(url)")
    }
  }

  /// The token over plain http:// through another host is the hop reading it.
  @Test func theTokenNeverGoesOverPlainHTTPThroughAProxyThatIsNotLoopback() {
    let remote = settings(["http_proxy": "http://user:pw@proxy.example.com:3128"])
    guard case .refused(let reason) = remote.route("http://api.example.com/x", carriesCredentials: true) else {
      Issue.record("not refused")
      return
    }
    #expect(reason.contains("http_proxy") && reason.contains("proxy.example.com:3128"))
    #expect(!reason.contains("pw"))  // the proxy's own credentials are not said
    #expect(remote.route("http://api.example.com/x", carriesCredentials: false) != .direct)
    for hop in ["vm:3128", "http://127.1:3128", "https://proxy.example.com"] {
      guard case .refused = settings(["http_proxy": hop]).route("http://api.example.com/", carriesCredentials: true)
      else {
        Issue.record("\(hop) not refused")
        continue
      }
    }
    // Through TLS the proxy sees only a tunnel; a loopback proxy never leaves the machine.
    let tls = settings(["https_proxy": "http://proxy.example.com:3128"])
    #expect(tls.route("https://api.example.com/x", carriesCredentials: true) != .direct)
    let local = settings(["http_proxy": "127.0.0.1:3128"])
    #expect(
      local.route("http://api.example.com/x", carriesCredentials: true)
        == .through(.init(url: "127.0.0.1:3128", variable: "http_proxy")))
  }
}
