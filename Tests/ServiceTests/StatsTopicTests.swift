import JSON
import Posix
import TestSupport
import Testing

@testable import Service

/// A `statsChanged` notification, read.
struct StatsPushed {
  let subscription: String
  let seq: Int64
  let stats: JSON

  static func all(_ messages: [JSON]) -> [StatsPushed] {
    messages.compactMap { message in
      guard message["method"]?.string == "statsChanged", let params = message["params"],
        let subscription = params["subscription"]?.string, let seq = params["seq"]?.integer,
        let stats = params["stats"]
      else { return nil }
      return StatsPushed(subscription: subscription, seq: seq, stats: stats)
    }
  }
}

/// The stats topic (schema `x-notifications` "statsChanged"), on the manual clock: pushed
/// right after the subscribe reply, then at most once a second and only when the
/// figures changed, latest wins for a slow reader, and no timer without a subscriber.
@Suite struct StatsTopicTests {
  init() { Process.ignoreBrokenPipes() }

  let statsTopic = #"[{"type":"stats"}]"#

  @Test func theFirstPushFollowsTheReplyThenOnlyChangesArePushedOnceASecond() throws {
    let fixture = try ServiceFixture(backendLatencyMs: 10)
    let exchanged = try fixture.peer.exchange("subscribe", #"{"topics":\#(statsTopic)}"#, id: 1)
    let name = try #require(exchanged.first?["result"]?["subscription"]?.string, "the reply comes first")
    #expect(try #require(exchanged.first?["result"]?["snapshot"]?.count) == 0)
    let first = StatsPushed.all(exchanged + (try fixture.peer.drain()))
    #expect(first.map(\.subscription) == [name])
    #expect(first.map(\.seq) == [1])
    #expect(first.first?.stats["subscriptions"]?.integer == 1)
    #expect(first.first?.stats["connections"]?["list"]?[0]?["subscriptions"]?.integer == 1)

    // Nothing happened: a second passing is no news.
    fixture.clock.advance(by: .seconds(1))
    #expect(StatsPushed.all(try fixture.peer.drain()).isEmpty)

    // A follow changes the figures; they go out at the next tick, not before.
    _ = try fixture.peer.reply("follow", #"{"kind":"artist","id":"banksy"}"#, id: 2)
    fixture.clock.advance(by: .milliseconds(500))
    #expect(StatsPushed.all(try fixture.peer.drain()).isEmpty)
    fixture.clock.advance(by: .milliseconds(500))
    let pushed = StatsPushed.all(try fixture.peer.drain())
    #expect(pushed.count == 1)
    #expect(pushed.first?.stats["entities"]?.integer == 1)
    #expect(pushed.first?.stats["backend"]?["mutations"]?.integer == 1)
    #expect(pushed.first?.stats["notifications"]?["stats"]?.integer == 1)
    #expect(pushed.first?.seq == 2)
  }

  /// Joining between two ticks, a subscriber has its first figures at once, skips the
  /// tick less than a second later, and has the change it skipped at the tick after.
  @Test func aSubscriberJoiningBetweenTicksStillHearsAtMostOnceASecond() throws {
    let fixture = try ServiceFixture()  // the backend answers at once: one change, then none
    let early = fixture.peer
    let late = try InProcessPeer(server: fixture.service.server)
    _ = try early.subscribe(statsTopic, id: 1)
    fixture.clock.advance(by: .milliseconds(600))
    _ = try early.drain()
    let joined = try late.exchange("subscribe", #"{"topics":\#(statsTopic)}"#, id: 1)
    let name = try #require(joined.first?["result"]?["subscription"]?.string)
    #expect(StatsPushed.all(joined + (try late.drain())).count == 1, "its first figures, at once")
    _ = try early.reply("follow", #"{"kind":"artist","id":"banksy"}"#, id: 2)
    fixture.clock.advance(by: .milliseconds(400))  // the tick at 1 s
    #expect(StatsPushed.all(try early.drain()).count == 1)
    #expect(StatsPushed.all(try late.drain()).isEmpty, "0.4 s after its first figures")
    fixture.clock.advance(by: .seconds(1))  // the tick at 2 s: nothing changed since 1 s
    #expect(StatsPushed.all(try early.drain()).isEmpty)
    let owed = StatsPushed.all(try late.drain())
    #expect(owed.map(\.subscription) == [name], "the change it skipped")
    #expect(owed.first?.stats["entities"]?.integer == 1)
  }

  @Test func pendingAndFailedEntitiesAreCounted() throws {
    let fixture = try ServiceFixture(backendLatencyMs: 10)
    _ = try fixture.peer.reply("follow", #"{"kind":"artist","id":"banksy"}"#, id: 1)
    let stats = try #require(try fixture.call("stats", id: 2)["result"])
    #expect(stats["entitiesPending"]?.integer == 1)
    #expect(stats["entitiesFailed"]?.integer == 0)
    fixture.clock.advance(by: .milliseconds(10))
    _ = try fixture.peer.drain()
    #expect(try fixture.call("stats", id: 3)["result"]?["entitiesPending"]?.integer == 0)
  }

  @Test func aSlowReaderGetsTheLatestFiguresNotABacklog() throws {
    let fixture = try ServiceFixture(backendLatencyMs: 10)
    let slow = try InProcessPeer(server: fixture.service.server)
    try slow.send(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"topics":\#(statsTopic)}}"#)
    // Replies it does not read fill its socket and then its connection's buffer.
    for id in 2..<12 { try slow.send(#"{"jsonrpc":"2.0","id":\#(id),"method":"rpc.discover"}"#) }
    for _ in 0..<20 { try fixture.service.loop.runOnce(wait: false) }
    for second in 0..<3 {
      _ = try fixture.peer.reply("follow", #"{"kind":"artist","id":"a\#(second)"}"#, id: 100 + second)
      fixture.clock.advance(by: .seconds(1))
      _ = try fixture.peer.drain()
    }
    let stats = try #require(try fixture.call("stats", id: 200)["result"])
    let slowFigures = try #require(stats["connections"]?["list"]?.elements.first { $0["id"]?.integer == 2 })
    #expect((slowFigures["unsentBytes"]?.integer ?? 0) > 0)
    #expect(slowFigures["queued"]?.integer == 1, "one push waits, however many ticks passed")
    #expect((stats["notifications"]?["coalesced"]?.integer ?? 0) >= 3)

    // Its first push waited behind the replies and was replaced by each tick's.
    let pushes = StatsPushed.all(try slow.drain(iterations: 200))
    #expect(pushes.count == 1, "\(pushes.map { $0.stats["entities"]?.integer })")
    #expect(pushes.last?.stats["entities"]?.integer == 3)
  }

  @Test func theTimerStopsWithTheLastSubscriber() throws {
    let fixture = try ServiceFixture()
    let name = try fixture.peer.subscribe(statsTopic, id: 1)
    #expect(fixture.service.statsPush.timer != nil)
    _ = try fixture.peer.reply("unsubscribe", #"{"subscription":"\#(name)"}"#, id: 2)
    fixture.clock.advance(by: .seconds(1))
    _ = try fixture.peer.drain()
    #expect(fixture.service.statsPush.timer == nil)
    #expect(fixture.service.loop.nextTimerDelay == nil)
  }

  @Test func aStatsTopicTakesNothingButItsType() throws {
    let fixture = try ServiceFixture()
    let reply = try fixture.peer.reply("subscribe", #"{"topics":[{"type":"stats","kind":"artist"}]}"#, id: 1)
    #expect(reply["error"]?["code"]?.integer == -32602)
    #expect(reply["error"]?["data"]?["path"]?.string == "/topics/0")
  }
}
