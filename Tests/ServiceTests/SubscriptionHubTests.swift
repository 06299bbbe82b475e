import JSON
import NetworkModels
import Posix
import Testing

@testable import Service

/// Found by bench/memory.py: 100 peers subscribed to 1,000 entities each, closed,
/// left ~13 MB resident after every entity and list was evicted, because the hub's
/// table of exact topics kept its capacity for 100,000 keys.
@Suite struct SubscriptionHubTests {
  init() { Process.ignoreBrokenPipes() }  // the server may write to a peer that closed

  func topics(_ count: Int) -> String {
    let list = (0..<count).map { #"{"type":"entity","kind":"artist","id":"a\#($0)"}"# }
    return #"{"topics":[\#(list.joined(separator: ","))]}"#
  }

  @Test func unsubscribingAndClosingGiveTheTopicTablesCapacityBack() throws {
    let fixture = try ServiceFixture()
    let hub = fixture.service.subscriptions
    let first = try fixture.peer.reply("subscribe", topics(5000), id: 1)
    let name = try #require(first["result"]?["subscription"]?.string)
    #expect(hub.tableCapacities.exact >= 5000)

    _ = try fixture.peer.reply("unsubscribe", #"{"subscription":"\#(name)"}"#, id: 2)
    #expect(hub.tableCapacities.exact <= 1024)

    _ = try fixture.peer.reply("subscribe", topics(5000), id: 3)
    #expect(hub.tableCapacities.exact >= 5000)
    _ = try fixture.peer.drain(iterations: 20)
    fixture.peer.closeWrite()
    for _ in 0..<20 { try fixture.service.loop.runOnce(wait: false) }
    #expect(hub.tableCapacities.exact <= 1024)
  }

  @Test func aFewTopicsLeftKeepTheirSubscribers() throws {
    let fixture = try ServiceFixture()
    let hub = fixture.service.subscriptions
    _ = try fixture.peer.reply("subscribe", #"{"topics":[{"type":"entity","kind":"artist","id":"kept"}]}"#, id: 1)
    let big = try fixture.peer.reply("subscribe", topics(5000), id: 2)
    let name = try #require(big["result"]?["subscription"]?.string)
    _ = try fixture.peer.reply("unsubscribe", #"{"subscription":"\#(name)"}"#, id: 3)
    #expect(hub.tableCapacities.exact <= 1024)
    #expect(hub.isSubscribed(.init(kind: "artist", id: "kept")))
    #expect(!hub.isSubscribed(.init(kind: "artist", id: "a1")))
  }
}
