import JSON
import Testing

@testable import NetworkModels

/// The state answer's flag is read by the envelope scanner when the rule names one
/// member of an object; whatever it reads must be what the jansson tree reads.
@Suite struct RESTAnswerScanTests {
  static let bodies = [
    #"{"following":true}"#, #"{"following":false}"#, #" { "id" : "a", "following" : true } "#,
    #"{"following":false,"following":true}"#, #"{"following":null}"#, #"{"following":1}"#,
    #"{"following":"yes"}"#, #"{"following":[]}"#, #"{"following":[1]}"#, #"{"following":{}}"#,
    #"{"following":{"a":1}}"#, #"{"other":true}"#, "{}", "[true]", "true", "", "{", #"{"following":tru}"#,
    #"{"following":true} x"#, #"{"follow\u0069ng":true}"#, #"{"following":true,}"#,
  ]
  static let rules: [RESTConfiguration.FollowingRule] = [
    .pointer(JSONPointer("/following")!), .nonEmpty(JSONPointer("/following")!),
    .pointer(JSONPointer("/0")!), .nonEmpty(JSONPointer("/other")!),
  ]

  @Test(arguments: bodies) func theScanReadsWhatTheTreeReads(body: String) {
    for rule in Self.rules {
      let bytes = Array(body.utf8)
      let tree = RESTFollows.followingFromTree(bytes, rule)
      let answer = RESTFollows.followingFromScan(bytes, rule) ?? tree
      #expect(answer == tree, "\(rule) of \(body)")
    }
  }

  @Test func onlyAMemberOfAnObjectIsScanned() {
    let rule = RESTConfiguration.FollowingRule.pointer(JSONPointer("/following")!)
    #expect(RESTFollows.followingFromScan(Array(#"{"following":true}"#.utf8), rule) == .success(true))
    #expect(RESTFollows.followingFromScan(Array("[true]".utf8), rule) == nil)
    #expect(RESTFollows.followingFromScan(Array("{}".utf8), .pointer(JSONPointer("/a/b")!)) == nil)
  }
}
