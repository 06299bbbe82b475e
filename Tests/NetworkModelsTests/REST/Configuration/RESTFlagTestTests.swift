import JSON
import NetworkModels
import Testing

@testable import NetworkModels

/// A flag is written one way wherever the language reads one (a state endpoint's
/// `following`, a batch's, a follow's answer): a pointer to a boolean, `{"nonEmpty": P}`
/// for "a value is there", or `{"pointer": P}` with a `when`'s `equals` or `contains`.
@Suite struct RESTFlagTestTests {
  static func configuration(state: String, follow: String = "") -> String {
    #"""
    {"environments": {"test": "http://127.0.0.1:1"},
     "kinds": {"k": {"follow": {"method": "POST", "path": "/f/{id}"FOLLOW},
                     "unfollow": {"method": "DELETE", "path": "/f/{id}"},
                     "state": {"method": "GET", "path": "/s/{id}", "following": STATE}}}}
    """#.replacingOccurrences("STATE", state).replacingOccurrences("FOLLOW", follow)
  }

  @Test func aStateReadTakesEqualsAndContains() throws {
    let parsed = try RESTConfiguration.parse(Self.configuration(state: #"{"pointer": "/state", "equals": "followed"}"#))
    let rule = try #require(parsed.kinds["k"]).state.following
    #expect(RESTFollows.followingFromTree(Array(#"{"state": "followed"}"#.utf8), rule) == .success(true))
    #expect(RESTFollows.followingFromTree(Array(#"{"state": "followed "}"#.utf8), rule) == .success(false))
    #expect(RESTFollows.followingFromTree(Array("{}".utf8), rule) == .success(false))
    // By bytes: a canonically equivalent spelling is another value.
    let accent = try RESTConfiguration.parse(Self.configuration(state: #"{"pointer": "/s", "equals": "caf\u00e9"}"#))
    let accentRule = try #require(accent.kinds["k"]).state.following
    #expect(RESTFollows.followingFromTree(Array(#"{"s": "cafe\u0301"}"#.utf8), accentRule) == .success(false))
    #expect(RESTFollows.followingFromTree(Array(#"{"s": "caf\u00e9"}"#.utf8), accentRule) == .success(true))
  }

  @Test func aFollowAnswerTakesTheSameWords() throws {
    let parsed = try RESTConfiguration.parse(
      Self.configuration(
        state: #""success""#, follow: #", "following": {"pointer": "/uri", "contains": "graph.follow"}"#))
    let answer = try #require(parsed.kinds["k"]).follow.answer
    #expect(answer.isFollowing(in: try JSON.parse(#"{"uri": "at://d/app.bsky.graph.follow/r"}"#)) == true)
    #expect(answer.isFollowing(in: try JSON.parse(#"{"uri": "at://d/app.bsky.feed.like/r"}"#)) == false)
    let present = try RESTConfiguration.parse(
      Self.configuration(state: #""success""#, follow: #", "following": {"nonEmpty": "/uri"}"#))
    let presence = try #require(present.kinds["k"]).follow.answer
    #expect(presence.isFollowing(in: try JSON.parse(#"{"uri": "x"}"#)) == true)
    #expect(presence.isFollowing(in: try JSON.parse(#"{"uri": null}"#)) == false)
    let boolean = try RESTConfiguration.parse(
      Self.configuration(state: #""success""#, follow: #", "following": {"pointer": "/following"}"#))
    #expect(
      try #require(boolean.kinds["k"]).follow.answer.isFollowing(in: try JSON.parse(#"{"following": "x"}"#)) == nil)
  }

  @Test(arguments: [
    (#"{"nonEmpty": "/a", "equals": "x"}"#, "/kinds/k/state/following/equals"),
    (#"{"pointer": "/a", "equals": "x", "contains": "y"}"#, "/kinds/k/state/following"),
    (#"{"pointer": "/a", "contains": ""}"#, "/kinds/k/state/following/contains"),
    (#"{"pointer": "/a", "nonEmpty": "/b"}"#, "/kinds/k/state/following"),
    (#"{"equals": "x"}"#, "/kinds/k/state/following"),
  ])
  func mistakesAreRefusedWithTheirPath(state: String, path: String) throws {
    do {
      _ = try RESTConfiguration.parse(Self.configuration(state: state))
      Issue.record("accepted")
    } catch {
      #expect(error.path == path)
    }
  }
}
