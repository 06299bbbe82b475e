import JSON
import Testing

@testable import netmodel

/// `watch --until`: the tests a printed state must pass (issue 27 §4).
@Suite struct WatchConditionTests {
  let line = try! JSON.parse(
    #"{"subscription":"s1","seq":2,"state":{"kind":"artist","id":"true","following":true,"pending":false,"#
      + #""error":{"code":-32003,"message":"unauthorized"},"attributes":null,"items":[{"id":"caf\u00e9"}],"version":7}}"#
  )

  func matches(_ tests: [String]) throws -> Bool { try WatchCondition(tests).matches(line) }

  @Test func everyTestMustHoldForTheState() throws {
    #expect(try matches(["following=true"]))
    #expect(try matches(["following=true", "pending=false", "version=7"]))
    #expect(try !matches(["following=true", "pending=true"]))
    #expect(try !WatchCondition([]).matches(line), "no test is no match: --count alone ends a watch")
  }

  @Test func aValueIsJSONWhenItParsesElseText() throws {
    #expect(try !matches(["following=yes"]), "text never matches a boolean")
    #expect(try matches(["kind=artist"]) && matches([#"kind="artist""#]))
    #expect(try !matches(["id=true"]), "true is JSON: the boolean, not the id \"true\"")
    #expect(try matches([#"id="true""#]))
    #expect(try matches(["attributes=null"]) && !matches(["missing=null"]), "an absent member matches nothing")
    #expect(try !matches(["version=7.0"]), "a number as written")
  }

  @Test func pathsReachNestedMembersAndArrayElements() throws {
    #expect(try matches(["error.code=-32003"]))
    #expect(try matches(["items.0.id=café"]))
    #expect(try !matches(["items.1.id=café"]) && !matches(["error.code.x=1"]))
    // Text by its bytes: e and a combining accent is another id than é.
    #expect(try !matches(["items.0.id=cafe\u{301}"]))
  }

  @Test func aStatsLineIsTestedItself() throws {
    let stats = try JSON.parse(#"{"subscription":"s2","seq":1,"stats":{"uptimeMs":5}}"#)
    #expect(try WatchCondition(["stats.uptimeMs=5"]).matches(stats))
  }

  @Test func aTestWithoutPathOrEqualsIsAUsageError() {
    for bad in ["following", "=true", "a..b=1", ".a=1", "a.=1"] {
      #expect(throws: ClientOptions.UsageError.self) { try WatchCondition([bad]) }
    }
  }
}
