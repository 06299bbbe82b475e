import JSON
import TestSupport
import Testing

@testable import Service

extension InProcessPeer {
  /// Sends a request and runs the loop one turn at a time until its reply arrives;
  /// returns everything those turns wrote, in order.
  func exchange(_ method: String, _ params: String, id: Int) throws -> [JSON] {
    try send(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#)
    var arrived: [JSON] = []
    for _ in 0..<200 {
      arrived += try drain(iterations: 1)
      if arrived.contains(where: { $0["id"]?.integer == Int64(id) }) { return arrived }
    }
    throw NoReply(method: method)
  }

  /// The reply to a request, without the notifications around it.
  func reply(_ method: String, _ params: String, id: Int) throws -> JSON {
    try exchange(method, params, id: id).first { $0["id"]?.integer == Int64(id) }!
  }

  /// The name of a new subscription to `topics` (JSON text of the array).
  func subscribe(_ topics: String, id: Int) throws -> String {
    let reply = try reply("subscribe", #"{"topics":\#(topics)}"#, id: id)
    return try #require(reply["result"]?["subscription"]?.string, "\(reply)")
  }
}

/// A `stateChanged` notification, read.
struct StateChanged {
  let subscription: String
  let seq: Int64
  let state: JSON

  /// The notifications among `messages`, in order.
  static func all(_ messages: [JSON]) -> [StateChanged] {
    messages.compactMap { message in
      guard message["method"]?.string == "stateChanged", let params = message["params"],
        let subscription = params["subscription"]?.string, let seq = params["seq"]?.integer,
        let state = params["state"]
      else { return nil }
      return StateChanged(subscription: subscription, seq: seq, state: state)
    }
  }
}

/// docs/protocol.md "Subscriptions", through the in-process service: who is told, in which
/// order, with which `seq`, and what coalescing keeps. The backend answers 10 ms after
/// each call, so a mutation and its confirmation are changes of separate loop turns.
@Suite struct SubscriptionTests {
  let banksy = #"{"kind":"artist","id":"banksy"}"#
  let banksyTopic = #"{"type":"entity","kind":"artist","id":"banksy"}"#

  /// The service with banksy followed and confirmed, and nothing left to come.
  func settledFixture() throws -> ServiceFixture {
    let fixture = try ServiceFixture(backendLatencyMs: 10)
    _ = try fixture.peer.reply("follow", banksy, id: 100)
    _ = try answerBackendCalls(fixture)
    return fixture
  }

  /// Lets the backend answer what it was asked, and runs the turns that follow.
  func answerBackendCalls(_ fixture: ServiceFixture, peers: [InProcessPeer] = []) throws -> [[JSON]] {
    fixture.clock.advance(by: .milliseconds(10))
    return try ([fixture.peer] + peers).map { try $0.drain() }
  }

  @Test func eachMatchingSubscriptionGetsOneNotificationPerChangeWithItsConnectionsSeq() throws {
    let fixture = try settledFixture()
    let a = fixture.peer
    let b = try InProcessPeer(server: fixture.service.server)
    let exact = try a.subscribe("[\(banksyTopic)]", id: 1)
    let kind = try a.subscribe(#"[{"type":"entity","kind":"artist"}]"#, id: 2)
    // Both of its topics match: still one notification for this subscription.
    let both = try b.subscribe(#"[{"type":"entity","kind":"artist"},\#(banksyTopic)]"#, id: 1)
    _ = try b.subscribe(#"[{"type":"entity","kind":"gene"}]"#, id: 2)
    #expect(StateChanged.all(try a.drain() + b.drain()).isEmpty)

    // The change is written ahead of the reply of the turn that made it.
    let exchanged = try a.exchange("unfollow", banksy, id: 3)
    let reply = try #require(exchanged.last?["result"])
    let toA = StateChanged.all(exchanged)
    #expect(exchanged.count == 3)
    #expect(toA.map(\.subscription) == [exact, kind])
    #expect(toA.map(\.seq) == [1, 2])
    #expect(toA.allSatisfy { $0.state == reply })
    let toB = StateChanged.all(try b.drain())
    #expect(toB.map(\.subscription) == [both])
    #expect(toB.map(\.seq) == [1])
    #expect(toB.allSatisfy { $0.state == reply })

    // The backend's answer is the next change.
    let answered = try answerBackendCalls(fixture, peers: [b]).map(StateChanged.all)
    #expect(answered[0].map(\.subscription) == [exact, kind])
    #expect(answered[0].map(\.seq) == [3, 4])
    #expect(answered[1].map(\.subscription) == [both])
    #expect(answered[1].map(\.seq) == [2])
    let confirmed = try #require(answered[1].first?.state)
    #expect(confirmed["pending"]?.bool == false && confirmed["confirmed"]?.bool == false)
    #expect(confirmed["version"]?.integer == (reply["version"]?.integer ?? 0) + 1)
    // One state each time: nothing was replaced while queued.
    let stats = try #require(try a.reply("stats", "{}", id: 4)["result"]?["notifications"])
    #expect(stats["sent"]?.integer == 6 && stats["coalesced"]?.integer == 0)
  }

  @Test func severalChangesInOneTurnAreOneNotificationWithTheLastState() throws {
    let fixture = try settledFixture()
    let peer = fixture.peer
    let name = try peer.subscribe("[\(banksyTopic)]", id: 1)
    // A batch runs in one loop turn: three changes before anything is written.
    let batch = ["unfollow", "follow", "unfollow"].enumerated().map { index, method in
      #"{"jsonrpc":"2.0","id":\#(index + 10),"method":"\#(method)","params":\#(banksy)}"#
    }
    try peer.send("[" + batch.joined(separator: ",") + "]")
    let arrived = try peer.drain(iterations: 1)
    let replies = try #require(arrived.last?.elements)
    let last = try #require(replies.first { $0["id"]?.integer == 12 }?["result"])
    let notifications = StateChanged.all(arrived)
    #expect(notifications.map(\.subscription) == [name])
    #expect(notifications.allSatisfy { $0.state == last })
    let stats = try peer.reply("stats", "{}", id: 2)
    #expect(stats["result"]?["notifications"]?["coalesced"]?.integer == 2)
  }

  @Test func unsubscribingStopsTheNotificationsEvenOnesAlreadyQueued() throws {
    let fixture = try settledFixture()
    let peer = fixture.peer
    let dropped = try peer.subscribe("[\(banksyTopic)]", id: 1)
    let kept = try peer.subscribe("[\(banksyTopic)]", id: 2)
    // The change queues a notification for both; the unsubscribe in the same turn
    // takes back the one of its subscription.
    try peer.send(
      #"[{"jsonrpc":"2.0","id":3,"method":"unfollow","params":\#(banksy)},"#
        + #"{"jsonrpc":"2.0","id":4,"method":"unsubscribe","params":{"subscription":"\#(dropped)"}}]"#)
    let arrived = try peer.drain(iterations: 1)
    #expect(StateChanged.all(arrived).map(\.subscription) == [kept])
    let replies = arrived.last?.elements ?? []
    #expect(replies.first { $0["id"]?.integer == 4 }?["result"]?["ok"]?.bool == true)

    let answered = try answerBackendCalls(fixture).map(StateChanged.all)
    #expect(answered[0].map(\.subscription) == [kept])
    let again = try peer.reply("unsubscribe", #"{"subscription":"\#(dropped)"}"#, id: 5)
    #expect(again["error"]?["code"]?.integer == -32602)
  }

  @Test func anotherConnectionsSubscriptionCannotBeEnded() throws {
    let fixture = try ServiceFixture()
    let other = try InProcessPeer(server: fixture.service.server)
    let name = try other.subscribe("[\(banksyTopic)]", id: 1)
    let reply = try fixture.peer.reply("unsubscribe", #"{"subscription":"\#(name)"}"#, id: 1)
    #expect(reply["error"]?["code"]?.integer == -32602)
    #expect(fixture.service.subscriptions.subscriptionCount == 1)
  }

  @Test func aClosedConnectionsSubscriptionsAreDropped() throws {
    let fixture = try settledFixture()
    let leaving = try InProcessPeer(server: fixture.service.server)
    _ = try leaving.subscribe(#"[{"type":"entity","kind":"artist","id":"kaws"}]"#, id: 1)
    _ = try leaving.subscribe("[\(banksyTopic)]", id: 2)
    _ = try fixture.peer.subscribe("[\(banksyTopic)]", id: 1)
    let hub = fixture.service.subscriptions
    #expect(hub.subscriptionCount == 3)

    leaving.closeWrite()
    _ = try fixture.peer.drain()
    #expect(hub.subscriptionCount == 1)
    #expect(!hub.isSubscribed(.init(kind: "artist", id: "kaws")))
    #expect(hub.isSubscribed(.init(kind: "artist", id: "banksy")))
    let stats = try fixture.peer.reply("stats", "{}", id: 2)
    #expect(stats["result"]?["subscriptions"]?.integer == 1)
  }

  @Test func aListTopicGetsTheWholeListStateOnEveryChange() throws {
    let fixture = try ServiceFixture(backendLatencyMs: 10)
    let peer = fixture.peer
    let topic = #"{"type":"list","list":"following/artist"}"#
    // A list never loaded starts loading; the subscription's own notifications come
    // after the reply that names it.
    let exchanged = try peer.exchange("subscribe", #"{"topics":[\#(topic)]}"#, id: 1)
    let reply = try #require(exchanged.first?["result"], "a notification came before the reply")
    let name = try #require(reply["subscription"]?.string)
    #expect(reply["snapshot"]?[0]?["state"]?.string == "loading")

    let loaded = try #require(try answerBackendCalls(fixture).map(StateChanged.all).first)
    #expect(loaded.map(\.subscription) == [name])
    #expect(loaded.first?.state["list"]?.string == "following/artist")
    #expect(loaded.first?.state["state"]?.string == "loaded")
    #expect(loaded.first?.state["items"]?.count == 0)

    // A confirmed follow makes the list out of date; being listened to, it is loaded
    // again, and its new state pushed whole.
    _ = try peer.reply("follow", banksy, id: 2)
    let refreshing = try answerBackendCalls(fixture)[0]
    let refreshed = try answerBackendCalls(fixture)[0]
    let states = StateChanged.all(refreshing + refreshed).filter { $0.subscription == name }.map(\.state)
    let newest = try #require(states.last)
    #expect(newest["state"]?.string == "loaded")
    #expect(newest["items"]?.elements.map { $0["id"]?.string } == ["banksy"])
  }
}

struct NoReply: Error { let method: String }
