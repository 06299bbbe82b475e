import NetworkModels
import Testing

@testable import NetworkModels

/// Named values (`{me}`, the user's own account id) and `{now}` in every template.
let valuesConfiguration = #"""
  {
    "environments": {"local": "http://127.0.0.1:1"},
    "timeoutMs": 2000,
    "retry": {"maxRetries": 0},
    "values": {"me": {"env": "TEST_ACCOUNT_ID"}, "app": {"value": "netmodel tests"}},
    "headers": {"X-App": "{app}"},
    "kinds": {
      "account": {
        "follow": {"method": "POST", "path": "/accounts/{id}/follow", "json": {"by": "{me}", "at": "{now}"},
          "headers": {"X-Me": "{me}"}},
        "unfollow": {"method": "POST", "path": "/accounts/{id}/unfollow"},
        "state": {"method": "GET", "path": "/accounts/{id}/state", "query": {"as": "{me}"}}
      }
    },
    "lists": {
      "following": {"method": "GET", "path": "/accounts/{me}/following", "item": {"kind": "account", "id": "/id"}}
    }
  }
  """#

@Suite struct RESTValuesTests {
  let account = EntityKey(kind: "account", id: "7")

  private func fixture(me: String?) throws -> RESTFixture {
    let f = try RESTFixture(token: me, edit: { _ in valuesConfiguration })
    f.backend.session.wallClock = { 1_796_137_445 }
    f.server.handler = { _ in .respond(status: 200, body: "[]") }
    return f
  }

  @Test func valuesFillPathQueryBodyAndHeaders() throws {
    let f = try fixture(me: "109")
    _ = try f.set(account, true).get()
    let follow = try #require(f.server.requests.first)
    #expect(follow.body == #"{"by":"109","at":"2026-12-01T15:04:05Z"}"#)
    #expect(follow.headers["x-me"] == "109" && follow.headers["x-app"] == "netmodel tests")
    _ = try f.read(account).get()
    #expect(f.server.requests.last?.query == "as=109")
    var page: Result<ListPage, FollowFailure>?
    f.backend.lists.fetchListPage(ListPageRequest(key: ListKey(name: "following"))) { page = $0 }
    try f.run { page != nil }
    #expect(f.server.requests.last?.path == "/accounts/109/following")
  }

  @Test func aTemplateNeedingAnUnsetValueFailsAtOnceAndSendsNothing() throws {
    let f = try fixture(me: nil)
    let failure = try #require(try f.set(account, true).failure)
    #expect(failure.failure.kind == .rejected(status: 0))
    #expect(failure.failure.message.contains("{me}") && failure.failure.message.contains("TEST_ACCOUNT_ID"))
    #expect(f.server.requests.isEmpty)
    // The unfollow names no value: it goes out.
    _ = try f.set(account, false)
    #expect(f.server.requests.map(\.path) == ["/accounts/7/unfollow"])
    #expect(f.backend.session.setValue("me", "42") == nil)
    _ = try f.set(account, true).get()
    #expect(f.server.requests.map(\.path) == ["/accounts/7/unfollow", "/accounts/7/follow"])
    #expect(f.server.requests.last?.headers["x-me"] == "42")
  }

  @Test func configureRefusesUnknownNamesAndUnsafeValues() throws {
    let f = try fixture(me: "1")
    #expect(f.backend.session.setValue("you", "1")?.contains("no value \"you\"") == true)
    #expect(f.backend.session.setValue("me", "a\r\nX-Evil: 1") != nil)
    #expect(f.backend.session.setValue("me", "..") != nil)
    #expect(f.backend.session.valueNames == ["app", "me"])
  }

  @Test func aPlaceholderNamingNoValueIsRefusedWithItsPath() throws {
    let text = valuesConfiguration.replacingOccurrences("/accounts/{id}/state", "/accounts/{you}/state")
    #expect(throws: RESTConfigurationError.self) { try RESTConfiguration.parse(text) }
    do {
      _ = try RESTConfiguration.parse(text)
    } catch {
      #expect(error.path == "/kinds/account/state/path")
      #expect(error.reason.contains("{me}") && error.reason.contains("{now}"))
    }
  }
}
