import NetworkModels
import Testing

@testable import Service

/// Topics named again are one topic, by their bytes (issue 25 item 9): `String`
/// equality would merge ids an API keeps apart.
@Suite struct TopicIdentityTests {
  typealias Topic = SubscriptionHub.Topic

  @Test func repeatedTopicsAreKeptOnceInTheOrderFirstNamed() {
    let list = Topic.list(ListKey(name: "following/artist"), params: [:])
    let banksy = Topic.entity(kind: "artist", id: "banksy")
    let named: [Topic] = [list, .entity(kind: nil, id: nil), banksy, list, .stats, banksy, .entity(kind: nil, id: nil)]
    let distinct = Topic.distinct(named)
    #expect(distinct.map(\.identity) == [list, .entity(kind: nil, id: nil), banksy, .stats].map(\.identity))
  }

  @Test func idsAndParamsEqualOnlyUnderUnicodeEquivalenceAreTwoTopics() {
    let composed = "caf\u{E9}"
    let decomposed = "cafe\u{301}"
    #expect(composed == decomposed)  // what `String` would merge
    let entities = Topic.distinct([.entity(kind: "artist", id: composed), .entity(kind: "artist", id: decomposed)])
    #expect(entities.count == 2)
    let lists = Topic.distinct([
      .list(ListKey(name: "ofGene", paramsText: #"{"gene":"\#(composed)"}"#), params: ["gene": composed]),
      .list(ListKey(name: "ofGene", paramsText: #"{"gene":"\#(decomposed)"}"#), params: ["gene": decomposed]),
    ])
    #expect(lists.count == 2)
  }

  @Test func fieldsAreDelimitedSoNoTwoTopicsShareBytes() {
    // A kind wildcard is not an exact topic with an empty id, and the split between
    // a list's name and its params matters.
    #expect(Topic.entity(kind: "ab", id: nil).identity != Topic.entity(kind: "ab", id: "").identity)
    let first = Topic.list(ListKey(name: "a", paramsText: "b{}"), params: [:])
    let second = Topic.list(ListKey(name: "ab", paramsText: "{}"), params: [:])
    #expect(first.identity != second.identity)
  }
}
