import EventLoop
import Glibc
import Posix
import TestSupport
import Testing

@testable import HTTP

/// The client against a real HTTP server on loopback, both driven by one loop.
@Suite struct HTTPClientTests {
  let loop: EventLoop
  let server: LoopbackHTTPServer

  init() throws {
    loop = try EventLoop()
    server = try LoopbackHTTPServer(loop: loop)
  }

  /// Runs the loop until `done` or 5 s of real time have passed.
  func run(until done: () -> Bool) throws {
    let deadline = Process.monotonicNanoseconds() + 10_000_000_000
    while !done() && Process.monotonicNanoseconds() < deadline {
      try loop.runOnce(wait: true)
    }
  }

  func send(_ client: HTTPClient, _ request: HTTPRequest) throws -> Result<HTTPResponse, HTTPError> {
    var result: Result<HTTPResponse, HTTPError>?
    client.send(request) { result = $0 }
    #expect(result == nil, "completions never run inside send")
    try run { result != nil }
    return try #require(result)
  }

  @Test func getReturnsStatusHeadersAndBody() throws {
    server.handler = { request in
      .respond(status: 200, headers: [("X-Echo", request.query)], body: #"{"path":"\#(request.path)"}"#)
    }
    let client = HTTPClient(loop: loop)
    let response = try send(client, HTTPRequest(method: "GET", url: server.baseURL + "/a/b?x=1&y[]=2")).get()
    #expect(response.status == 200)
    #expect(String(decoding: response.body, as: UTF8.self) == #"{"path":"/a/b"}"#)
    #expect(response.header("x-echo") == "x=1&y[]=2")
    #expect(server.requests.first?.method == "GET")
  }

  @Test func methodsHeadersAndBodiesAreSentAsGiven() throws {
    server.handler = { _ in .respond(status: 204) }
    let client = HTTPClient(loop: loop)
    let body = Array(#"{"artist_id":"banksy"}"#.utf8)
    _ = try send(
      client,
      HTTPRequest(
        method: "POST", url: server.baseURL + "/follow", headers: [("X-Access-Token", "secret")], body: body))
    _ = try send(client, HTTPRequest(method: "DELETE", url: server.baseURL + "/follow/banksy"))
    _ = try send(client, HTTPRequest(method: "PUT", url: server.baseURL + "/empty", body: []))
    // Pooled handles keep their options: nothing of the requests before may stay.
    _ = try send(client, HTTPRequest(method: "GET", url: server.baseURL + "/after"))
    let requests = server.requests
    #expect(requests.map(\.method) == ["POST", "DELETE", "PUT", "GET"])
    #expect(requests[0].body == #"{"artist_id":"banksy"}"#)
    #expect(requests[0].headers["x-access-token"] == "secret")
    #expect(requests[0].headers["expect"] == nil)
    #expect(requests[1].body == "" && requests[1].headers["content-length"] == nil)
    #expect(requests[2].headers["content-length"] == "0")
    #expect(requests[3].body == "" && requests[3].headers["content-length"] == nil)
    #expect(requests[3].headers["x-access-token"] == nil)
    #expect(requests[3].headers["accept-encoding"] == nil, "no compression asked of a loopback server")
  }

  @Test func loopbackURLsAreRecognised() {
    for url in [
      "http://127.0.0.1:8080/a", "https://127.1.2.3/", "http://[::1]:99/x", "http://localhost", "http://localhost:1/",
    ] {
      #expect(Transfer.isLoopback(url), "\(url)")
    }
    for url in ["http://localhost.example.com/", "https://api.example.com/", "ftp://127.0.0.1/", "http://10.0.0.1/"] {
      #expect(!Transfer.isLoopback(url), "\(url)")
    }
  }

  @Test func errorStatusesAreResponsesNotErrors() throws {
    server.handler = { _ in .respond(status: 503, headers: [("Retry-After", "2")], body: "busy") }
    let response = try send(HTTPClient(loop: loop), HTTPRequest(method: "GET", url: server.baseURL + "/")).get()
    #expect(response.status == 503)
    #expect(response.retryAfter == .seconds(2))
  }

  @Test func aHangingServerTimesOut() throws {
    server.handler = { _ in .hang }
    let started = Process.monotonicNanoseconds()
    let result = try send(
      HTTPClient(loop: loop), HTTPRequest(method: "GET", url: server.baseURL + "/", timeout: .milliseconds(150)))
    #expect(throws: HTTPError.self) { try result.get() }
    if case .failure(let error) = result { #expect(error.kind == .timedOut) }
    #expect(Process.monotonicNanoseconds() - started >= 150_000_000)
  }

  @Test func aDroppedConnectionIsConnectionLost() throws {
    server.handler = { _ in .drop }
    let result = try send(HTTPClient(loop: loop), HTTPRequest(method: "GET", url: server.baseURL + "/"))
    guard case .failure(let error) = result else {
      Issue.record("expected a failure")
      return
    }
    #expect(error.kind == .connectionLost)
  }

  @Test func aClosedPortCannotConnect() throws {
    let port = server.port
    server.stop()
    let result = try send(HTTPClient(loop: loop), HTTPRequest(method: "GET", url: "http://127.0.0.1:\(port)/"))
    guard case .failure(let error) = result else {
      Issue.record("expected a failure")
      return
    }
    #expect(error.kind == .couldNotConnect)
  }

  /// `aClosedPortCannotConnect` stops the server before its deinit stops it again: the
  /// listener's number, free in between, must not be closed twice, or whatever took
  /// it (a socket of another test, running on another thread) is closed under its owner.
  @Test func stoppingTheServerTwiceClosesItsListenerOnce() throws {
    var stopped: LoopbackHTTPServer? = try LoopbackHTTPServer(loop: loop)
    stopped?.stop()
    // Most often the listener's number: the lowest free one, unless another thread took it.
    let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(probe >= 0)
    stopped = nil
    let stillOpen = fcntl(probe, F_GETFD) != -1
    if stillOpen { _ = Glibc.close(probe) }  // not when closed already: its number may be another's by now
    #expect(stillOpen, "fd \(probe) was closed by the stopped server's deinit")
  }

  @Test func connectionsAreKeptAliveAndBoundedByTheLimit() throws {
    server.handler = { _ in .after(milliseconds: 5, .respond(status: 200, body: "ok")) }
    let client = HTTPClient(loop: loop, maxConnections: 4)
    var completed = 0
    for index in 0..<200 {
      client.send(HTTPRequest(method: "GET", url: server.baseURL + "/item/\(index)")) { result in
        if case .success(let response) = result, response.status == 200 { completed += 1 }
      }
    }
    try run { completed == 200 }
    #expect(completed == 200)
    #expect(server.connectionsAccepted <= 4)
    #expect(client.counters.connectionsOpened == server.connectionsAccepted)
    #expect(client.inFlight == 0)
  }

  /// A request's timeout runs from when it gets a connection, not from when it was
  /// queued behind others: 20 requests through one connection, 30 ms each, with a
  /// 200 ms timeout all succeed (libcurl's own queue would time out the later ones).
  @Test func waitingForAConnectionDoesNotCountAgainstTheTimeout() throws {
    server.handler = { _ in .after(milliseconds: 30, .respond(status: 200, body: "ok")) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var outcomes: [Result<HTTPResponse, HTTPError>] = []
    for index in 0..<20 {
      client.send(HTTPRequest(method: "GET", url: server.baseURL + "/\(index)", timeout: .milliseconds(200))) {
        outcomes.append($0)
      }
    }
    #expect(client.waiting == 19 && client.inFlight == 1)
    try run { outcomes.count == 20 }
    #expect(outcomes.allSatisfy { (try? $0.get())?.status == 200 })
    #expect(server.requests.map(\.path) == (0..<20).map { "/\($0)" }, "in the order sent")
  }

  @Test func aCompletionMayStartTheNextRequest() throws {
    server.handler = { request in .respond(status: 200, body: request.path) }
    let client = HTTPClient(loop: loop)
    var bodies: [String] = []
    func next(_ index: Int) {
      client.send(HTTPRequest(method: "GET", url: server.baseURL + "/\(index)")) { result in
        if case .success(let response) = result { bodies.append(String(decoding: response.body, as: UTF8.self)) }
        if index < 5 { next(index + 1) }
      }
    }
    next(0)
    try run { bodies.count == 6 }
    #expect(bodies == ["/0", "/1", "/2", "/3", "/4", "/5"])
    #expect(server.connectionsAccepted == 1)
  }

  /// libcurl stops watching a kept-alive socket when its transfer ends and watches it
  /// again for the next request. The handler the loop calls must stay the one made
  /// for that socket: a handler stored back after a trip through generic code grew by
  /// two reabstraction thunks a request, so wake-ups got slower without end and would
  /// at last overflow the stack.
  @Test func aSocketWatchedAgainForEveryRequestKeepsItsHandlerShallow() throws {
    server.handler = { _ in .respond(status: 200, body: "ok") }
    let client = HTTPClient(loop: loop)
    // Where the completion's stack frame lies: lower as the calls under it go deeper.
    var stackAddresses: [Int] = []
    for index in 0..<400 {
      var done = false
      client.send(HTTPRequest(method: "GET", url: server.baseURL + "/\(index)")) { _ in
        stackAddresses.append(
          withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { Int(bitPattern: $0.baseAddress) })
        done = true
      }
      try run { done }
    }
    #expect(server.connectionsAccepted == 1, "one kept-alive connection, watched again for each request")
    let settled = stackAddresses.dropFirst(10)
    #expect(settled.count == 390)
    #expect(
      settled.max()! - settled.min()! < 1024,
      "the stack under a completion grew by \(settled.max()! - settled.min()!) bytes over 390 requests")
  }

  /// The next waiting request goes out before a completion runs; a screen runs before
  /// it does, so a hold it puts on keeps that request back.
  @Test func aScreenRunsBeforeTheNextRequestAndAHoldItPutsOnKeepsThatBack() throws {
    server.handler = { request in .respond(status: request.path == "/limited" ? 429 : 200) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var log: [String] = []
    let hold: (Result<HTTPResponse, HTTPError>) -> Void = { result in
      log.append("screen \((try? result.get())?.status ?? 0): \(client.inFlight) out")
      if (try? result.get())?.status == 429 { client.hold(until: self.loop.clock.now + .milliseconds(300)) }
    }
    for path in ["/first", "/limited", "/after"] {
      client.send(HTTPRequest(method: "GET", url: server.baseURL + path), screen: hold) { _ in
        log.append("completion \(path): \(client.inFlight) out")
      }
    }
    try run { log.count == 6 }
    #expect(
      log == [
        "screen 200: 0 out", "completion /first: 1 out",
        "screen 429: 0 out", "completion /limited: 0 out",
        "screen 200: 0 out", "completion /after: 0 out",
      ])
    #expect(paths == ["/first", "/limited", "/after"])
  }

  /// A hold gives up, unsent, each waiting request it would keep longer than its
  /// `maxHoldWait`, and one sent while it lasts; the others wait for it to end.
  @Test func aHoldGivesUpTheRequestsThatMayNotWaitThatLong() throws {
    server.handler = { request in .respond(status: request.path == "/first" ? 429 : 200) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var outcomes: [String: Result<HTTPResponse, HTTPError>] = [:]
    let hold: (Result<HTTPResponse, HTTPError>) -> Void = { result in
      if (try? result.get())?.status == 429 { client.hold(until: self.loop.clock.now + .seconds(2)) }
    }
    func send(_ path: String, maxHoldWait: Duration?) {
      client.send(
        HTTPRequest(method: "PUT", url: server.baseURL + path, maxHoldWait: maxHoldWait), screen: hold
      ) { outcomes[path] = $0 }
    }
    send("/first", maxHoldWait: nil)
    send("/patient", maxHoldWait: nil)
    send("/hasty", maxHoldWait: .milliseconds(100))
    send("/long-enough", maxHoldWait: .seconds(3))
    let started = Process.monotonicNanoseconds()
    try run { outcomes["/hasty"] != nil }
    send("/late", maxHoldWait: .seconds(1))
    #expect(outcomes["/late"] == nil, "the completion runs on the loop, not inside send")
    try run { outcomes["/late"] != nil }
    #expect(Process.monotonicNanoseconds() - started < 1_000_000_000, "given up at once, not when the hold ends")
    for path in ["/hasty", "/late"] {
      let error = try #require(outcomes[path]?.failure)
      #expect(error.kind == .heldTooLong)
      #expect(error.message.hasPrefix("PUT \(server.baseURL)\(path): not sent: "))
      #expect(error.message.contains("for another 2 s"), "\(error.message)")
    }
    #expect(outcomes["/hasty"]?.failure?.message.hasSuffix("may wait (100 ms)") == true)
    #expect(client.waiting == 2 && client.counters.cancelled == 2)
    client.endHold("test")
    try run { outcomes.count == 5 }
    #expect(paths == ["/first", "/patient", "/long-enough"])
  }

  /// Requests a completion sends must keep their rank against waiting ones: only the
  /// highest priority goes out before the completions run.
  @Test func onlyTheHighestPriorityGoesOutBeforeACompletionRuns() throws {
    server.handler = { _ in .respond(status: 200) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var outAtCompletion: [Int] = []
    for (path, priority) in [("/0", HTTPPriority.user), ("/1", .user), ("/2", .visible)] {
      client.send(HTTPRequest(method: "GET", url: server.baseURL + path), priority: priority) { _ in
        outAtCompletion.append(client.inFlight)
      }
    }
    try run { outAtCompletion.count == 3 }
    #expect(outAtCompletion == [1, 0, 0], "/1 went out before /0's completion; /2 after /1's")
    #expect(paths == ["/0", "/1", "/2"])
  }

  @Test func anOversizedAnswerIsRefused() throws {
    server.handler = { _ in .respond(status: 200, body: String(repeating: "x", count: 10_000)) }
    let result = try send(
      HTTPClient(loop: loop, maxBodyBytes: 1000), HTTPRequest(method: "GET", url: server.baseURL + "/"))
    guard case .failure(let error) = result else {
      Issue.record("expected a failure")
      return
    }
    #expect(error.kind == .tooLarge)
  }

  /// The path of each request the server received, in order.
  var paths: [String] { server.requests.map(\.path) }

  @Test func waitingRequestsGoHighestPriorityFirstOldestFirstWithinOne() throws {
    server.handler = { _ in .after(milliseconds: 10, .respond(status: 200)) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var done = 0
    let sends: [(String, HTTPPriority)] = [
      ("/on-the-wire", .preload), ("/p1", .preload), ("/d1", .display), ("/p2", .preload), ("/v1", .visible),
      ("/u1", .user), ("/d2", .display), ("/u2", .user),
    ]
    for (path, priority) in sends {
      client.send(HTTPRequest(method: "GET", url: server.baseURL + path), priority: priority) { _ in done += 1 }
    }
    try run { done == sends.count }
    #expect(paths == ["/on-the-wire", "/u1", "/u2", "/v1", "/d1", "/d2", "/p1", "/p2"])
  }

  @Test func aWaitingRequestCanBeCancelledOrMovedButNotOneOnTheWire() throws {
    server.handler = { _ in .after(milliseconds: 10, .respond(status: 200)) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var outcomes: [String: Result<HTTPResponse, HTTPError>] = [:]
    var tickets: [String: HTTPTicket] = [:]
    for path in ["/0", "/1", "/2", "/3"] {
      tickets[path] = client.send(HTTPRequest(method: "GET", url: server.baseURL + path), priority: .preload) {
        outcomes[path] = $0
      }
    }
    #expect(client.cancel(tickets["/1"]!))
    #expect(outcomes["/1"] == nil, "the completion runs on the loop, not inside cancel")
    #expect(client.setPriority(tickets["/3"]!, .visible))
    #expect(!client.cancel(tickets["/0"]!), "on the wire: it finishes")
    #expect(client.waiting == 2)
    try run { outcomes.count == 4 }
    #expect(paths == ["/0", "/3", "/2"])
    #expect(outcomes["/1"]?.failure?.kind == .cancelled)
    #expect((try? outcomes["/0"]?.get())?.status == 200)
    #expect(!client.cancel(tickets["/1"]!) && !client.setPriority(tickets["/2"]!, .user), "done: nothing to do")
    #expect(client.counters.cancelled == 1 && client.counters.requests == 4)
  }

  /// What a backend does when its environment, token or values change: every request
  /// still waiting is given up at once; the one on the wire finishes.
  @Test func everyWaitingRequestCanBeGivenUpAtOnce() throws {
    server.handler = { _ in .after(milliseconds: 10, .respond(status: 200)) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var outcomes: [String: Result<HTTPResponse, HTTPError>] = [:]
    for (path, priority) in [("/0", HTTPPriority.preload), ("/1", .user), ("/2", .preload)] {
      client.send(HTTPRequest(method: "GET", url: server.baseURL + path), priority: priority) { outcomes[path] = $0 }
    }
    #expect(client.cancelWaiting() == 2)
    #expect(outcomes.isEmpty, "the completions run on the loop, not inside cancelWaiting")
    #expect(client.waiting == 0 && client.cancelWaiting() == 0)
    try run { outcomes.count == 3 }
    #expect(paths == ["/0"])
    #expect(outcomes["/1"]?.failure?.kind == .cancelled && outcomes["/2"]?.failure?.kind == .cancelled)
    #expect((try? outcomes["/0"]?.get())?.status == 200 && client.counters.cancelled == 2)
  }

  /// A completion that sends runs while its connection is free: the new request must
  /// still wait behind a waiting one of higher priority (and may pass lower ones).
  @Test func aRequestSentFromACompletionDoesNotOvertakeHigherPriorityWork() throws {
    server.handler = { _ in .after(milliseconds: 10, .respond(status: 200)) }
    let client = HTTPClient(loop: loop, maxConnections: 1)
    var done = 0
    client.send(HTTPRequest(method: "GET", url: server.baseURL + "/first"), priority: .preload) { _ in
      done += 1
      client.send(HTTPRequest(method: "GET", url: self.server.baseURL + "/next-preload"), priority: .preload) { _ in
        done += 1
      }
      client.send(HTTPRequest(method: "GET", url: self.server.baseURL + "/user")) { _ in done += 1 }
    }
    client.send(HTTPRequest(method: "GET", url: server.baseURL + "/visible"), priority: .visible) { _ in done += 1 }
    client.send(HTTPRequest(method: "GET", url: server.baseURL + "/old-preload"), priority: .preload) { _ in done += 1 }
    try run { done == 5 }
    #expect(paths == ["/first", "/user", "/visible", "/old-preload", "/next-preload"])
  }
}

extension Result {
  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}

/// Where the client's libcurl runs: on the loop for a lone request, on its own thread for
/// a burst (`CurlRunner`), the multi handle moving whole, with what is on the wire.
@Suite struct CurlRunnerTests {
  let loop: EventLoop
  let server: LoopbackHTTPServer

  init() throws {
    loop = try EventLoop()
    server = try LoopbackHTTPServer(loop: loop)
    server.handler = { request in .after(milliseconds: 30, .respond(status: 200, body: request.path)) }
  }

  func run(until done: () -> Bool) throws {
    let deadline = Process.monotonicNanoseconds() + 10_000_000_000
    while !done() && Process.monotonicNanoseconds() < deadline { try loop.runOnce(wait: true) }
  }

  func get(_ client: HTTPClient, _ path: String, into answers: Answers) {
    client.send(HTTPRequest(method: "GET", url: server.baseURL + path)) { result in
      answers.byPath[path] = result.map { String(decoding: $0.body, as: UTF8.self) }
    }
  }

  final class Answers {
    var byPath: [String: Result<String, HTTPError>] = [:]
  }

  @Test func aBurstMovesLibcurlToItsThreadWithWhatIsOnTheWireAndQuietBringsItBack() throws {
    let client = HTTPClient(loop: loop, maxConnections: 16)
    client.runner.quietBeforeReturn = .milliseconds(50)
    let burst = (1..<CurlRunner.threadFrom).map { "/\($0)" }  // and /0
    let answers = Answers()
    get(client, "/lone", into: answers)
    try run { answers.byPath.count == 1 }
    #expect(!client.runner.onItsThread, "a lone request is served on the loop")

    get(client, "/0", into: answers)
    try run { server.requests.count == 2 }
    #expect(!client.runner.onItsThread, "one in flight: still on the loop, and /0 is on the wire")
    for path in burst.dropLast() { get(client, path, into: answers) }
    #expect(!client.runner.onItsThread, "\(CurlRunner.threadFrom - 1) in flight: still on the loop")
    #expect(client.libcurlMoves == 0)
    get(client, burst.last!, into: answers)
    #expect(client.runner.onItsThread, "a burst: libcurl moved, taking /0's transfer along")
    #expect(client.libcurlOnItsThread && client.libcurlMoves == 1, "what stats shows")
    try run { answers.byPath.count == burst.count + 2 }
    for path in ["/lone", "/0"] + burst {
      #expect((try? answers.byPath[path]?.get()) == path, "each answer reaches its own request")
    }

    try run { !client.runner.onItsThread }
    #expect(!client.runner.onItsThread, "quiet for 50 ms: back on the loop")
    #expect(!client.libcurlOnItsThread && client.libcurlMoves == 1, "a move there is counted, not the way back")
    let opened = client.counters.connectionsOpened
    get(client, "/after", into: answers)
    try run { answers.byPath.count == burst.count + 3 }
    #expect((try? answers.byPath["/after"]?.get()) == "/after")
    #expect(client.counters.connectionsOpened == opened, "the connections came back too: kept alive, reused")
  }

  /// While the handle is on its way back nothing can take a request: it waits, and goes
  /// out as the handle arrives.
  @Test func aRequestSentWhileLibcurlComesBackWaitsForItAndGoesOut() throws {
    let client = HTTPClient(loop: loop, maxConnections: 16)
    client.runner.quietBeforeReturn = .zero
    let answers = Answers()
    let burst = (1...CurlRunner.threadFrom).map { "/\($0)" }
    for path in burst { get(client, path, into: answers) }
    #expect(client.runner.onItsThread)
    try run { answers.byPath.count == burst.count }
    try run { client.runner.isComingBack || !client.runner.onItsThread }
    try #require(client.runner.isComingBack, "asked back, not arrived: the runner's state between two turns")
    get(client, "/held", into: answers)
    #expect(server.requests.count == burst.count, "held, not sent")
    try run { answers.byPath.count == burst.count + 1 }
    #expect((try? answers.byPath["/held"]?.get()) == "/held")
    #expect(!client.runner.onItsThread)
  }

  /// What the process stops with: requests on the wire are dropped without their
  /// completions (the outbox keeps what they carried), the thread, when libcurl is on it,
  /// is joined, not left running with a multi handle whose owner is gone.
  @Test(arguments: [1, CurlRunner.threadFrom])
  func aClientDroppedWithRequestsOnTheWireRunsNoCompletion(maxConnections: Int) throws {
    server.handler = { _ in .after(milliseconds: 100, .respond(status: 200)) }
    var completions = 0
    var client: HTTPClient? = HTTPClient(loop: loop, maxConnections: maxConnections)
    for path in (0...maxConnections).map({ "/\($0)" }) {
      client!.send(HTTPRequest(method: "GET", url: server.baseURL + path)) { _ in completions += 1 }
    }
    #expect(client!.runner.onItsThread == (maxConnections > 1))
    try run { server.requests.count == maxConnections }
    #expect(server.requests.count == maxConnections, "on the wire, the others waiting")
    client = nil
    let quiet = Process.monotonicNanoseconds() + 300_000_000
    while Process.monotonicNanoseconds() < quiet { try loop.runOnce(wait: false) }
    #expect(completions == 0)
  }
}
