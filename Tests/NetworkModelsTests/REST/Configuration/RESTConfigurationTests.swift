import EventLoop
import HTTP
import JSON
import NetworkModels
import Testing

/// An Artsy-like configuration: each kind with its own quirks.
let artsyLikeConfiguration = #"""
  {
    "$schema": "../schema/backend.schema.json",
    "environments": {"test": "http://127.0.0.1:1", "production": "https://api.example.com/"},
    "auth": {"header": "X-Access-Token", "tokenEnv": "TEST_TOKEN"},
    "headers": {"Accept": "application/json"},
    "timeoutMs": 2000,
    "maxInFlight": 4,
    "retry": {"maxRetries": 2, "baseDelayMs": 10, "maxDelayMs": 40},
    "kinds": {
      "artist": {
        "follow": {"method": "POST", "path": "/api/v1/me/follow/artist", "form": {"artist_id": "{id}"},
                   "attributes": "/artist"},
        "unfollow": {"method": "DELETE", "path": "/api/v1/me/follow/artist/{id}", "onStatus": {"404": "done"}},
        "state": {"method": "GET", "path": "/api/v1/me/follow/artists", "query": {"artists[]": "{ids}"},
                  "batch": {"maxIds": 50, "windowMs": 2, "id": "/artist/id"}, "onStatus": {"404": "notFollowing"}}
      },
      "profile": {
        "follow": {"method": "POST", "path": "/api/v1/me/follow/profile", "json": {"profile_id": "{id}"}},
        "unfollow": {"method": "DELETE", "path": "/api/v1/me/follow/profile/{id}"},
        "state": {"method": "GET", "path": "/api/v1/me/follow/profile/{id}", "onStatus": {"404": "notFollowing"}}
      },
      "gene": {
        "follow": {"method": "PUT", "path": "/genes/{id}/follow", "json": {"kind": "{kind}", "ids": ["{id}"]}},
        "unfollow": {"method": "DELETE", "path": "/genes/{id}/follow"},
        "state": {"method": "GET", "path": "/genes/{id}", "following": {"pointer": "/is_followed"}}
      },
      "show": {
        "retry": {"maxRetries": 0},
        "follow": {"method": "POST", "path": "/shows/{id}/follow"},
        "unfollow": {"method": "DELETE", "path": "/shows/{id}/follow"},
        "state": {"method": "GET", "path": "/me/follows", "query": {"show_id": "{id}"}, "following": "nonEmpty"}
      }
    }
  }
  """#

@Suite struct RESTConfigurationTests {
  @Test func aFullConfigurationParses() throws {
    let configuration = try RESTConfiguration.parse(artsyLikeConfiguration)
    #expect(configuration.environments.map(\.name) == ["test", "production"])
    #expect(configuration.defaultEnvironment == "test")
    #expect(configuration.baseURL(of: "production") == "https://api.example.com")
    #expect(configuration.maxInFlight == 4)
    #expect(configuration.retry.maxRetries == 2)
    let artist = try #require(configuration.kinds["artist"])
    #expect(artist.unfollow.statusMeanings[404] == .done)
    #expect(artist.state.batch?.maxIds == 50)
    #expect(artist.state.batch?.id.tokens == ["artist", "id"])
    #expect(configuration.kinds["profile"]?.state.endpoint.statusMeanings[404] == .notFollowing)
    #expect(configuration.kinds["gene"]?.state.following == .pointer(JSONPointer("/is_followed")!))
    #expect(configuration.kinds["show"]?.state.following == .nonEmpty(.root))
    // A kind's retry overrides the top-level one field by field.
    #expect(configuration.kinds["show"]?.retry?.maxRetries == 0)
    #expect(configuration.kinds["show"]?.retry?.baseDelayMs == 10)
    #expect(configuration.kinds["artist"]?.retry == nil)
  }

  /// Each bad file is refused with the path of the field at fault.
  @Test(arguments: [
    (#"{"environments": {}, "kinds": {}}"#, "/environments"),
    (#"{"environments": {"a": "ftp://x"}, "kinds": {}}"#, "/environments/a"),
    (#"{"environments": {"a": "http://x"}, "environment": "b", "kinds": {}}"#, "/environment"),
    (#"{"environments": {"a": "http://x"}, "kinds": {}}"#, "/kinds"),
    (#"{"environments": {"a": "http://x"}, "kind": {}}"#, "/kind"),
    (#"{"environments": {"a": "http://x"}, "kinds": {"Artist": {}}}"#, "/kinds/Artist"),
    (#"{"environments": {"a": "http://x"}, "kinds": {"a": {"follow": {}}}}"#, "/kinds/a"),
    (
      #"{"environments": {"a": "http://x"}, "timeoutMs": -1, "kinds": {"a": {"follow": {"method": "POST", "path": "/"},"#
        + #""unfollow": {"method": "POST", "path": "/"}, "state": {"method": "GET", "path": "/"}}}}"#, "/timeoutMs"
    ),
  ])
  func badFilesNameTheField(text: String, path: String) {
    #expect(throws: RESTConfigurationError.self) { try RESTConfiguration.parse(text) }
    do {
      _ = try RESTConfiguration.parse(text)
    } catch {
      #expect(error.path == path, "\(error)")
    }
  }

  /// A field's path is made only for an error, from where its parent is in the file:
  /// equal values elsewhere (an earlier kind with the same rules, every `true` being one
  /// jansson value) must not be taken for it.
  @Test(arguments: [
    (#"true"#, #"{}"#, "/kinds/two/follow/onStatus/404/1/waitMs", "must be a whole number from 1 to 86400000"),
    (
      #"5"#, #"{"a~b/c": true}"#, "/kinds/two/retry/a~0b~1c",
      "unknown field (expected one of: maxRetries, baseDelayMs, maxDelayMs, maxWaitMs, whenExhausted, onUnauthorized)"
    ),
  ])
  func anErrorNamesItsOwnFieldAmongEqualOnes(waitMs: String, retry: String, path: String, reason: String) {
    func kind(waitMs: String, retry: String) -> String {
      #"{"follow": {"method": "POST", "path": "/f", "onStatus": {"404": [{"means": "retry"}, {"means": "retry", "waitMs": "#
        + waitMs
        + #"}]}}, "unfollow": {"method": "POST", "path": "/u"}, "state": {"method": "GET", "path": "/s"}, "retry": "#
        + retry + "}"
    }
    let text =
      #"{"environments": {"a": "http://x"}, "kinds": {"one": "# + kind(waitMs: "5", retry: "{}") + #", "two": "#
      + kind(waitMs: waitMs, retry: retry) + "}}"
    do {
      _ = try RESTConfiguration.parse(text)
      Issue.record("accepted")
    } catch {
      #expect(error.path == path)
      #expect(error.reason == reason)
    }
  }

  func refusal(_ kindsText: String) -> RESTConfigurationError? {
    let text = #"{"environments": {"a": "http://x"}, "kinds": {"artist": "# + kindsText + "}}"
    do {
      _ = try RESTConfiguration.parse(text)
      return nil
    } catch {
      return error
    }
  }

  @Test func endpointMistakesAreRefusedWithTheirPath() throws {
    let follow =
      #""follow": {"method": "POST", "path": "/f/{id}"}, "unfollow": {"method": "DELETE", "path": "/f/{id}"}"#
    let unknownPlaceholder = refusal(#"{\#(follow), "state": {"method": "GET", "path": "/s/{uid}"}}"#)
    #expect(unknownPlaceholder?.path == "/kinds/artist/state/path")
    #expect(unknownPlaceholder?.reason.contains("{uid}") == true)
    let batchWithoutIDs = refusal(#"{\#(follow), "state": {"method": "GET", "path": "/s", "batch": {"id": "/id"}}}"#)
    #expect(batchWithoutIDs?.path == "/kinds/artist/state")
    let idsInsideText = refusal(
      #"{\#(follow), "state": {"method": "GET", "path": "/s", "query": {"q": "x{ids}"}, "batch": {"id": "/id"}}}"#)
    #expect(idsInsideText?.path == "/kinds/artist/state/query/q")
    let badMethod = refusal(#"{\#(follow), "state": {"method": "FETCH", "path": "/s/{id}"}}"#)
    #expect(badMethod?.path == "/kinds/artist/state/method")
    let typo = refusal(#"{\#(follow), "state": {"method": "GET", "path": "/s/{id}", "onStatuses": {}}}"#)
    #expect(typo?.path == "/kinds/artist/state/onStatuses")
    let badMeaning = refusal(
      #"{\#(follow), "state": {"method": "GET", "path": "/s/{id}", "onStatus": {"404": "gone"}}}"#)
    #expect(badMeaning?.path == "/kinds/artist/state/onStatus/404")
    let badPointer = refusal(
      #"{\#(follow), "state": {"method": "GET", "path": "/s/{id}", "following": {"pointer": "x"}}}"#)
    #expect(badPointer?.path == "/kinds/artist/state/following/pointer")
    #expect(refusal(#"{\#(follow), "state": {"method": "GET", "path": "/s/{id}"}}"#) == nil)
  }

  /// Paths are JSON Pointers: a key with `/` or `~` is escaped (`child` skips the
  /// escaping for the common key, so both kinds of key are checked).
  @Test func keysWithSlashOrTildeAreEscapedInErrorPaths() throws {
    let follow =
      #""follow": {"method": "POST", "path": "/f/{id}"}, "unfollow": {"method": "DELETE", "path": "/f/{id}"}"#
    let escaped = refusal(#"{\#(follow), "state": {"method": "GET", "path": "/s", "query": {"a/b~c": "{uid}"}}}"#)
    #expect(escaped?.path == "/kinds/artist/state/query/a~1b~0c")
    let plain = refusal(#"{\#(follow), "state": {"method": "GET", "path": "/s", "query": {"abc": "{uid}"}}}"#)
    #expect(plain?.path == "/kinds/artist/state/query/abc")
  }

  /// A meaning the endpoint cannot honour is refused at start, never met at run time:
  /// a contradiction would resend the change forever, "done" says nothing of a state,
  /// and a detail answer is an object no status can stand for.
  @Test(arguments: [
    ("follow", #"{"404": "notFollowing"}"#, "/kinds/artist/follow/onStatus/404"),
    ("unfollow", #"{"409": "following"}"#, "/kinds/artist/unfollow/onStatus/409"),
    ("state", #"{"404": "done"}"#, "/kinds/artist/state/onStatus/404"),
    ("batchedState", #"{"404": "done"}"#, "/kinds/artist/state/onStatus/404"),
    ("detail", #"{"404": "notFollowing"}"#, "/kinds/artist/detail/onStatus/404"),
    ("detail", #"{"403": "retry"}"#, nil),
    ("follow", #"{"403": {"means": "retry", "when": {"header": "x-ratelimit-remaining", "equals": "0"}}}"#, nil),
    ("state", #"{"403": [{"means": "retry", "when": {"header": "retry-after"}}, {"means": "notFollowing"}]}"#, nil),
    ("follow", #"{"403": {"means": "notFollowing"}}"#, "/kinds/artist/follow/onStatus/403/means"),
    ("follow", #"{"403": {"means": "retry", "when": {"equals": "0"}}}"#, "/kinds/artist/follow/onStatus/403/when"),
    ("follow", #"{"403": {"means": "retry", "if": {}}}"#, "/kinds/artist/follow/onStatus/403/if"),
    (
      "unfollow", #"{"403": [{"means": "retry"}, {"means": "following"}]}"#,
      "/kinds/artist/unfollow/onStatus/403/1/means"
    ),
    ("state", #"{"403": []}"#, "/kinds/artist/state/onStatus/403"),
    ("follow", #"{"409": "following", "404": "done"}"#, nil),
    ("unfollow", #"{"404": "notFollowing"}"#, nil),
    ("state", #"{"404": "notFollowing", "410": "following"}"#, nil),
    ("batchedState", #"{"404": "notFollowing", "299": "following"}"#, nil),
  ])
  func statusMeaningsAreRefusedWhereTheyCannotBeHonoured(endpoint: String, meanings: String, path: String?) {
    func onStatus(_ name: String) -> String { name == endpoint ? #", "onStatus": \#(meanings)"# : "" }
    let state =
      endpoint == "batchedState"
      ? #""state": {"method": "GET", "path": "/s", "query": {"a[]": "{ids}"}, "batch": {"id": "/id"}\#(onStatus("batchedState"))}"#
      : #""state": {"method": "GET", "path": "/s/{id}"\#(onStatus("state"))}"#
    let kind =
      #"{"follow": {"method": "POST", "path": "/f/{id}"\#(onStatus("follow"))}, "#
      + #""unfollow": {"method": "DELETE", "path": "/f/{id}"\#(onStatus("unfollow"))}, "#
      + #""detail": {"method": "GET", "path": "/d/{id}"\#(onStatus("detail"))}, \#(state)}"#
    #expect(refusal(kind)?.path == path, "\(refusal(kind).map(\.description) ?? "accepted")")
  }
}

/// The auth token travels in clear only to loopback (issue 16): another host on plain
/// http:// is refused while `auth` is set, unless `allowPlainHTTP` makes it a warning.
@Suite struct PlainHTTPTests {
  func parse(_ url: String, auth: String? = #"{"header": "X-Token"}"#) throws(RESTConfigurationError)
    -> RESTConfiguration
  {
    let kinds =
      #"{"a": {"follow": {"method": "POST", "path": "/f"}, "unfollow": {"method": "DELETE", "path": "/f"}, "#
      + #""state": {"method": "GET", "path": "/f"}}}"#
    return try RESTConfiguration.parse(
      #"{"environments": {"e": "\#(url)"}, \#(auth.map { #""auth": \#($0), "# } ?? "")"kinds": \#(kinds)}"#)
  }

  @Test(arguments: [
    "https://api.example.com", "http://localhost", "http://localhost:8080/api", "http://127.0.0.1",
    "http://127.10.0.254:1?x", "http://[::1]:80#f", "https://",
  ])
  func loopbackAndHTTPSAreFine(url: String) throws {
    #expect(try parse(url).warnings.isEmpty)
  }

  @Test(arguments: [
    "http://10.0.0.5:8080", "http://api.example.com", "http://", "http://127.0.0.1.evil.example",
    "http://localhost@evil.example", "http://127.0.0.1:80@evil.example", "http://LOCALHOST", "http://[::2]",
    "http://127.0.0/x",
  ])
  func anotherHostOnPlainHTTPIsRefusedUnlessOptedIn(url: String) throws {
    do {
      _ = try parse(url)
      Issue.record("\(url) accepted")
    } catch {
      #expect(error.path == "/environments/e" && error.reason.contains("allowPlainHTTP"), "\(error)")
    }
    let optedIn = try parse(url, auth: #"{"header": "X-Token", "allowPlainHTTP": true}"#)
    #expect(optedIn.warnings.map(\.path) == ["/environments/e"])
    #expect(try parse(url, auth: nil).warnings.isEmpty)  // no token, nothing to expose
  }
}

@Suite struct RequestBuildingTests {
  let backend: RESTBackend

  init() throws {
    let loop = try EventLoop()
    backend = RESTBackend(
      configuration: try RESTConfiguration.parse(artsyLikeConfiguration), loop: loop,
      environmentVariables: { $0 == "TEST_TOKEN" ? "t0ken" : nil })
  }

  func endpoints(_ kind: String) throws -> RESTConfiguration.KindEndpoints {
    try #require(backend.session.configuration.kinds[kind])
  }

  @Test func idsArePercentEncodedSoTheyCannotAddSegments() throws {
    let request = backend.session.request(try endpoints("artist").unfollow, kind: "artist", id: "a/b c?d=é")
    #expect(request.url == "http://127.0.0.1:1/api/v1/me/follow/artist/a%2Fb%20c%3Fd%3D%C3%A9")
    #expect(request.method == "DELETE" && request.body == nil)
  }

  @Test func arrayParametersRepeatPerID() throws {
    let request = backend.session.request(
      try endpoints("artist").state.endpoint, kind: "artist", ids: ["banksy", "kaws&co"])
    #expect(request.url == "http://127.0.0.1:1/api/v1/me/follow/artists?artists[]=banksy&artists[]=kaws%26co")
  }

  @Test func formAndJSONBodiesAreFilledIn() throws {
    let form = backend.session.request(try endpoints("artist").follow, kind: "artist", id: "andy warhol")
    #expect(String(decoding: form.body ?? [], as: UTF8.self) == "artist_id=andy%20warhol")
    #expect(form.headers.contains { $0 == ("Content-Type", "application/x-www-form-urlencoded") })
    let json = backend.session.request(try endpoints("gene").follow, kind: "gene", id: "pop-\"art\"")
    let body = try JSON.parse(json.body ?? [])
    #expect(body["kind"]?.string == "gene")
    #expect(body["ids"]?[0]?.string == "pop-\"art\"")
    #expect(json.headers.contains { $0 == ("Content-Type", "application/json") })
  }

  @Test func theTokenGoesInTheConfiguredHeaderOnlyAndConfigureReplacesIt() throws {
    let first = backend.session.request(try endpoints("profile").state.endpoint, kind: "profile", id: "x")
    #expect(first.headers.contains { $0 == ("X-Access-Token", "t0ken") })
    #expect(first.headers.contains { $0 == ("Accept", "application/json") })
    #expect(!first.url.contains("t0ken") && !first.summary.contains("t0ken"))
    backend.session.setAuthToken(nil)
    let second = backend.session.request(try endpoints("profile").state.endpoint, kind: "profile", id: "x")
    #expect(!second.headers.contains { $0.name == "X-Access-Token" })
  }

  @Test func environmentsChooseTheBaseURL() throws {
    #expect(backend.session.selectEnvironment("production"))
    #expect(!backend.session.selectEnvironment("staging"))
    let request = backend.session.request(try endpoints("show").state.endpoint, kind: "show", id: "s1")
    #expect(request.url == "https://api.example.com/me/follows?show_id=s1")
  }
}
