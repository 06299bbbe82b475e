import JSON
import NetworkModels
import Testing

/// A Mastodon-like API whose answers state the follow state (a Relationship): the
/// follow of a locked account is a request, and every answer is read, never assumed.
let relationshipConfiguration = #"""
  {
    "environments": {"local": "http://127.0.0.1:1"},
    "timeoutMs": 2000,
    "retry": {"maxRetries": 2, "baseDelayMs": 1, "maxDelayMs": 2},
    "kinds": {
      "account": {
        "follow": {"method": "POST", "path": "/api/v1/accounts/{id}/follow",
          "following": "/following", "requested": "/requested"},
        "unfollow": {"method": "POST", "path": "/api/v1/accounts/{id}/unfollow", "following": "/following"},
        "state": {"method": "GET", "path": "/api/v1/accounts/relationships", "query": {"id[]": "{ids}"},
          "batch": {"maxIds": 40, "windowMs": 2, "items": "", "id": "/id",
            "following": "/following", "requested": "/requested"}}
      },
      "single": {
        "follow": {"method": "POST", "path": "/single/{id}/follow"},
        "unfollow": {"method": "POST", "path": "/single/{id}/unfollow"},
        "state": {"method": "GET", "path": "/single/relationships", "query": {"id[]": "{id}"},
          "following": {"pointer": "/0/following"}, "requested": "/0/requested"}
      }
    }
  }
  """#

@Suite struct RESTRelationshipTests {
  let locked = EntityKey(kind: "account", id: "7")

  private func fixture() throws -> RESTFixture { try RESTFixture(edit: { _ in relationshipConfiguration }) }

  private func relationship(_ id: String, following: Bool, requested: Bool) -> String {
    #"{"id":"\#(id)","following":\#(following),"requested":\#(requested),"showing_reblogs":true}"#
  }

  @Test func aFollowAnsweredRequestedIsARequestNeverAFollow() throws {
    let f = try fixture()
    f.server.handler = { _ in .respond(status: 200, body: relationship("7", following: false, requested: true)) }
    let state = try f.set(locked, true).get()
    #expect(state.requested && state.confirmed == false && state.following == false)
    #expect(!state.pending && state.error == nil)
    #expect(f.server.requests.map(\.path) == ["/api/v1/accounts/7/follow"])
  }

  @Test func aFollowAnsweredFollowingIsConfirmed() throws {
    let f = try fixture()
    f.server.handler = { _ in .respond(status: 200, body: relationship("7", following: true, requested: false)) }
    let state = try f.set(locked, true).get()
    #expect(state.confirmed == true && !state.requested)
  }

  @Test func aFollowAnsweredNeitherFollowingNorRequestedFails() throws {
    let f = try fixture()
    f.server.handler = { request in
      request.path.hasSuffix("/follow")
        ? .respond(status: 200, body: relationship("7", following: false, requested: false))
        : .respond(status: 200, body: "[" + relationship("7", following: false, requested: false) + "]")
    }
    let failure = try #require(try f.set(locked, true).failure)
    #expect(failure.failure.kind == .rejected(status: 200))
    #expect(failure.failure.message.contains("did not follow"))
    #expect(failure.state.confirmed != true && !failure.state.requested)
    #expect(f.server.requests.filter { $0.path.hasSuffix("/follow") }.count == 1)
  }

  @Test(arguments: ["{}", "not json", #"{"following":"yes","requested":false}"#])
  func aTwoHundredThatDoesNotSayIsRetriedThenFails(body: String) throws {
    let f = try fixture()
    f.server.handler = { request in
      request.path.hasSuffix("/follow") ? .respond(status: 200, body: body) : .respond(status: 200, body: "[]")
    }
    let failure = try #require(try f.set(locked, true).failure)
    #expect(failure.failure.kind == .unavailable)
    #expect(failure.failure.message.contains("no true or false at /following"))
    #expect(failure.state.confirmed != true)
    #expect(f.server.requests.filter { $0.path.hasSuffix("/follow") }.count == 3)
  }

  @Test func anUnfollowAnsweredStillFollowingFails() throws {
    let f = try fixture()
    f.server.handler = { request in
      .respond(status: 200, body: relationship("7", following: true, requested: false))
    }
    _ = try f.set(locked, true).get()
    let failure = try #require(try f.set(locked, false).failure)
    #expect(failure.failure.message.contains("still follows"))
    #expect(failure.state.confirmed == true)
  }

  @Test func anUnfollowWithdrawsARequest() throws {
    let f = try fixture()
    f.server.handler = { request in
      .respond(
        status: 200,
        body: relationship("7", following: false, requested: request.path.hasSuffix("/follow")))
    }
    #expect(try f.set(locked, true).get().requested)
    let state = try f.set(locked, false).get()
    #expect(!state.requested && state.confirmed == false && state.error == nil)
  }

  /// One object per id asked, in any order; an id the answer leaves out is not "not
  /// following": the answer does not say.
  @Test func aBatchedReadMatchesEachItemByIDAndFailsAnIDLeftOut() throws {
    let f = try fixture()
    f.server.handler = { _ in
      .respond(
        status: 200,
        body: "[" + relationship("3", following: false, requested: true) + ","
          + relationship("2", following: false, requested: false) + "," + #"{"id":1,"following":true}"# + "]")
    }
    var results: [String: Result<EntityState, FollowStore.SettleFailure>] = [:]
    for id in ["1", "2", "3", "4"] {
      f.store.read(EntityKey(kind: "account", id: id), maxAgeMs: 0) { results[id] = $0 }
    }
    try f.run { results.count == 4 }
    #expect(f.server.requests.count == 1)
    #expect(f.server.requests.first?.query == "id[]=1&id[]=2&id[]=3&id[]=4")
    #expect(try results["1"]?.get().confirmed == true)
    #expect(try results["2"]?.get().confirmed == false)
    #expect(try results["2"]?.get().requested == false)
    #expect(try results["3"]?.get().requested == true)
    #expect(try results["3"]?.get().confirmed == false)
    let missing = try #require(results["4"]?.failure)
    #expect(missing.failure.message.contains("no item for id 4"))
    #expect(missing.state.confirmed == nil)
  }

  @Test func aBatchedItemWithoutItsFlagFails() throws {
    let f = try fixture()
    f.server.handler = { _ in .respond(status: 200, body: #"[{"id":"5"}]"#) }
    let failure = try #require(try f.read(EntityKey(kind: "account", id: "5")).failure)
    #expect(failure.failure.message.contains("no true or false at /following"))
  }

  @Test func aSingleReadShowsARequest() throws {
    let f = try fixture()
    f.server.handler = { _ in
      .respond(status: 200, body: "[" + relationship("9", following: false, requested: true) + "]")
    }
    let state = try f.read(EntityKey(kind: "single", id: "9")).get()
    #expect(state.requested && state.confirmed == false)
    f.server.handler = { _ in .respond(status: 200, body: #"[{"id":"9","following":false}]"#) }
    #expect(try f.read(EntityKey(kind: "single", id: "9")).failure?.failure.message.contains("/0/requested") == true)
  }
}
