import EventLoop
import HTTP
import NetworkModels
import Posix
import TestSupport
import Testing

/// The preloader on the REST backend against a real loopback server whose detail
/// endpoint is slow, with fewer connections (`maxInFlight`) than the preloader's 16
/// loads at once: detail calls wait in the HTTP client's queue, and that is where
/// `none` must give them up and `visible` (and user work) must overtake them.
final class SlowDetailFixture {
  let loop: EventLoop
  let server: LoopbackHTTPServer
  let backend: RESTBackend
  let store: FollowStore
  let preloader: Preloader
  /// Every request as it went out (got a connection): `detail:ID`, `follow:ID` or
  /// `state`, with the level of the detail's item at that moment.
  var started: [(call: String, level: Preloader.Level)] = []

  init(maxInFlight: Int, detailMs: UInt64) throws {
    loop = try EventLoop()
    server = try LoopbackHTTPServer(loop: loop)
    let configuration = try RESTConfiguration.parse(
      """
      {"environments": {"test": "\(server.baseURL)"}, "maxInFlight": \(maxInFlight),
       "kinds": {"artist": {
         "follow": {"method": "POST", "path": "/follow/{id}"},
         "unfollow": {"method": "DELETE", "path": "/follow/{id}"},
         "state": {"method": "GET", "path": "/follows", "query": {"ids[]": "{ids}"},
                   "batch": {"maxIds": 50, "windowMs": 2, "id": "/id"}},
         "detail": {"method": "GET", "path": "/artist/{id}"}}}}
      """)
    backend = RESTBackend(configuration: configuration, loop: loop)
    store = FollowStore(loop: loop, backend: backend, policy: configuration.retry)
    preloader = Preloader(store: store)
    server.handler = { request in
      guard request.path.hasPrefix("/artist/") else { return .respond(status: 200, body: "[]") }
      return .after(milliseconds: detailMs, .respond(status: 200, body: #"{"id":"\#(request.path.dropFirst(8))"}"#))
    }
    backend.session.http.onStart = { [unowned self] request in
      let path = request.url.dropFirst(server.baseURL.count).prefix { $0 != "?" }
      let id = String(path.split(separator: "/").last ?? "")
      if path.hasPrefix("/artist/") {
        started.append(("detail:\(id)", preloader.level(of: Self.artist(id))))
      } else if path.hasPrefix("/follow/") {
        started.append(("follow:\(id)", .none))
      } else {
        started.append(("state", .none))
      }
    }
  }

  static func artist(_ id: String) -> EntityKey { EntityKey(kind: "artist", id: id) }
  static func artists(_ prefix: String, _ range: Range<Int>) -> [EntityKey] { range.map { artist("\(prefix)\($0)") } }

  /// Detail calls that went out while their item was out of every host's range.
  var outOfRange: [String] { started.filter { $0.call.hasPrefix("detail:") && $0.level == .none }.map(\.call) }

  var detailsStarted: [String] {
    started.map(\.call).filter { $0.hasPrefix("detail:") }.map { String($0.dropFirst(7)) }
  }

  func run(until done: () -> Bool) throws {
    let deadline = Process.monotonicNanoseconds() + 20_000_000_000
    while !done() && Process.monotonicNanoseconds() < deadline { try loop.runOnce(wait: true) }
  }

  func run(milliseconds: UInt64) throws {
    var elapsed = false
    loop.schedule(after: .milliseconds(milliseconds)) { elapsed = true }
    try run { elapsed }
  }

  func runUntilIdle() throws {
    try run { preloader.inFlightCount == 0 && preloader.queuedCount == 0 && backend.session.http.inFlight == 0 }
  }
}

@Suite struct PreloaderPriorityTests {
  /// The issue's case: 40 items in preload, then all but 5 back to `none`. Only the
  /// calls already on the wire may finish; nothing goes out for the 35 afterwards.
  @Test(arguments: [1, 2, 6])
  func noneGivesUpDetailCallsWaitingForAConnection(maxInFlight: Int) throws {
    let f = try SlowDetailFixture(maxInFlight: maxInFlight, detailMs: 100)
    let items = SlowDetailFixture.artists("c", 0..<40)
    f.preloader.set(items, to: .preload, host: 1)
    try f.run(milliseconds: 20)
    #expect(f.detailsStarted.count == maxInFlight, "the rest wait for a connection")
    f.preloader.set(Array(items[..<35]), to: .none, host: 1)
    try f.runUntilIdle()
    #expect(f.outOfRange.isEmpty, "detail calls that went out for items out of range")
    #expect(f.detailsStarted.count == maxInFlight + 5, "those on the wire, then one per item still shown")
    #expect(Set(f.detailsStarted.suffix(5)) == Set((35..<40).map { "c\($0)" }))
    for key in items[35...] { #expect(f.store.state(key).attributes != nil) }
    #expect(f.preloader.counters.cancelled == 35 - maxInFlight)
    #expect(f.preloader.counters.detailCalls == maxInFlight + 5)
    #expect(
      f.backend.statistics.calls["artist.detail"] == f.server.requests.filter { $0.path.hasPrefix("/artist/") }.count)
    #expect(f.backend.session.http.counters.cancelled == 16 - maxInFlight, "the preloader had handed 16 over")
  }

  /// 30 items in preload (most of their calls waiting), then a follow, a `getEntity`
  /// and 3 visible items: the next calls to go out are the user's, then the visible
  /// ones, before any preload call that was waiting.
  @Test(arguments: [1, 2, 6])
  func userWorkThenVisibleItemsOvertakeQueuedPreloadWork(maxInFlight: Int) throws {
    let f = try SlowDetailFixture(maxInFlight: maxInFlight, detailMs: 60)
    f.preloader.set(SlowDetailFixture.artists("p", 0..<30), to: .preload, host: 1)
    try f.run(milliseconds: 20)
    let mark = f.started.count
    f.preloader.set(SlowDetailFixture.artists("v", 0..<3), to: .visible, host: 1)
    _ = f.store.setFollowing(SlowDetailFixture.artist("banksy"), true)
    var answered = false
    f.preloader.entity(SlowDetailFixture.artist("kaws"), refresh: true) { _ in answered = true }
    try f.run { answered && Set(f.detailsStarted).isSuperset(of: ["v0", "v1", "v2"]) }
    let next = f.started[mark...].map(\.call).filter { $0 != "state" }
    #expect(Array(next.prefix(5)) == ["follow:banksy", "detail:kaws", "detail:v0", "detail:v1", "detail:v2"])
  }

  /// A visible item whose detail call waits at `preload` is moved up when it becomes
  /// visible, and back down when it goes back to preload.
  @Test func aWaitingCallMovesWithItsItem() throws {
    let f = try SlowDetailFixture(maxInFlight: 1, detailMs: 40)
    f.preloader.set(SlowDetailFixture.artists("p", 0..<6), to: .preload, host: 1)
    try f.run(milliseconds: 10)
    f.preloader.set([SlowDetailFixture.artist("p4")], to: .visible, host: 1)
    f.preloader.set([SlowDetailFixture.artist("p1")], to: .display, host: 1)
    f.preloader.set([SlowDetailFixture.artist("p2")], to: .visible, host: 1)
    f.preloader.set([SlowDetailFixture.artist("p2")], to: .preload, host: 1)
    try f.runUntilIdle()
    #expect(f.detailsStarted == ["p0", "p4", "p1", "p3", "p5", "p2"])
  }

  /// A `getEntity` that joins a preload item's waiting call raises it to user
  /// priority, and `none` no longer gives it up: the user gets the attributes.
  @Test func getEntityJoiningAWaitingCallRaisesItAndKeepsIt() throws {
    let f = try SlowDetailFixture(maxInFlight: 1, detailMs: 40)
    f.preloader.set(SlowDetailFixture.artists("p", 0..<5), to: .preload, host: 1)
    try f.run(milliseconds: 10)
    var answer: Result<EntityState, FollowStore.SettleFailure>?
    f.preloader.entity(SlowDetailFixture.artist("p3"), refresh: false) { answer = $0 }
    f.preloader.set(SlowDetailFixture.artists("p", 0..<5), to: .none, host: 1)
    try f.runUntilIdle()
    #expect(f.detailsStarted == ["p0", "p3"])
    #expect((try? answer?.get())?.attributes == #"{"id":"p3"}"#)
    #expect(f.preloader.counters.detailShared == 1 && f.preloader.counters.cancelled == 3)
  }

  /// An item whose waiting call was given up and that comes back before the call's
  /// completion ran is queued again and loaded once.
  @Test func anItemThatComesBackAfterItsCallWasGivenUpIsLoaded() throws {
    let f = try SlowDetailFixture(maxInFlight: 1, detailMs: 40)
    let items = SlowDetailFixture.artists("p", 0..<3)
    f.preloader.set(items, to: .preload, host: 1)
    try f.run(milliseconds: 10)
    f.preloader.set(items, to: .none, host: 1)
    f.preloader.set([items[2]], to: .visible, host: 1)
    try f.runUntilIdle()
    #expect(f.detailsStarted == ["p0", "p2"])
    #expect(f.store.state(items[2]).attributes != nil)
    #expect(f.outOfRange.isEmpty)
  }

  /// The issue's scroll (1,000 items, 20 visible and 40 in preload ahead, 5 items per
  /// 16 ms frame) with 30 ms details: no call goes out for an item out of range, and
  /// none twice.
  @Test(arguments: [1, 2, 6])
  func theScrollNeverCallsForAnItemOutOfRange(maxInFlight: Int) throws {
    let f = try SlowDetailFixture(maxInFlight: maxInFlight, detailMs: 30)
    let items = SlowDetailFixture.artists("s", 0..<1000)
    var shown: [EntityKey: Preloader.Level] = [:]
    for top in stride(from: 0, through: 940, by: 5) {
      var wanted: [EntityKey: Preloader.Level] = [:]
      for key in items[top..<min(top + 20, 1000)] { wanted[key] = .visible }
      for key in items[min(top + 20, 1000)..<min(top + 60, 1000)] { wanted[key] = .preload }
      f.preloader.set(shown.keys.filter { wanted[$0] == nil }, to: .none, host: 1)
      for level in [Preloader.Level.visible, .preload] {
        f.preloader.set(wanted.filter { $0.value == level && shown[$0.key] != level }.map(\.key), to: level, host: 1)
      }
      shown = wanted
      try f.run(milliseconds: 16)
    }
    f.preloader.set(Array(shown.keys), to: .none, host: 1)
    try f.runUntilIdle()
    let details = f.detailsStarted
    #expect(f.outOfRange.isEmpty, "detail calls that went out for items out of range")
    #expect(Set(details).count == details.count, "no item fetched twice")
    #expect(details.count > 20 * maxInFlight, "the scroll took 3 s at 30 ms a call")
    #expect(f.preloader.counters.cancelled > 0)
  }
}
