// Reading REST answers: one input is an answer to one endpoint of one configuration
// (a fixed one, then every examples/*/config.json: between them every answer
// construct: status meanings with `when`, `errors`, `answer` pointers, `requested`,
// batches by subset, by position and with flags per item, captures, reset headers).
// Byte 0 picks the configuration, byte 1 the kind, endpoint, list and Link base URL,
// bytes 2-3 the status (a few common ones, or any 100...599), then headers up to a
// NUL byte (as received: `Name: value` lines), then the body.
//
// Each answer is read as the backend reads it (`RESTFollows.sendChange`,
// `fetchFollowing`, `flush`: the same calls, on a backend made once per
// configuration; values it captures are dropped after each input).
//
// Oracles: nothing traps; the status mapping holds (2xx without a configured meaning
// or errors is success or an unreadable-answer failure, never rejected or
// unauthorized; 401/403 unauthorized; 408/429/5xx unavailable, with Retry-After
// capped at an hour; other 4xx rejected); a 2xx the configuration cannot read is
// never a success (checked against the answer read independently: the booleans at
// the configured pointers, the batch's array, the captured values, no errors); a
// rate-limit wait is at most `ResetTime.longest`; a next-page Link is resolved to an
// absolute URL.

import EventLoop
import FuzzSupport
import Glibc
import JSON
import Posix

@testable import HTTP
@testable import NetworkModels

let configurationText = #"""
  {
    "environments": {"test": "http://127.0.0.1:9/api/v1"},
    "kinds": {
      "artist": {
        "follow": {"method": "POST", "path": "/f/{id}", "attributes": "/artist"},
        "unfollow": {"method": "DELETE", "path": "/f/{id}", "onStatus": {"404": "done"}},
        "state": {"method": "GET", "path": "/s", "query": {"ids[]": "{ids}"},
                  "batch": {"maxIds": 50, "windowMs": 2, "id": "/artist/id"}, "onStatus": {"404": "notFollowing"}},
        "detail": {"method": "GET", "path": "/artist/{id}", "attributes": ""}
      },
      "gene": {
        "follow": {"method": "PUT", "path": "/genes/{id}/follow", "onStatus": {"409": "following"}},
        "unfollow": {"method": "DELETE", "path": "/genes/{id}/follow"},
        "state": {"method": "GET", "path": "/genes/{id}", "following": {"pointer": "/is_followed"}}
      },
      "show": {
        "follow": {"method": "POST", "path": "/shows/{id}/follow"},
        "unfollow": {"method": "DELETE", "path": "/shows/{id}/follow"},
        "state": {"method": "GET", "path": "/me/follows", "query": {"show_id": "{id}"}, "following": "nonEmpty"}
      },
      "tag": {
        "follow": {"method": "PUT", "path": "/t/{id}", "capture": {"c": "/id"}},
        "unfollow": {"method": "DELETE", "path": "/t/{c}"},
        "state": {"method": "GET", "path": "/t", "query": {"ids": "{ids}"}, "batch": {"join": ",", "by": "position"}}
      },
      "profile": {
        "follow": {"method": "POST", "path": "/p/{id}"},
        "unfollow": {"method": "DELETE", "path": "/p/{id}"},
        "state": {"method": "GET", "path": "/p/{id}", "following": "success", "onStatus": {"404": "notFollowing"}}
      }
    },
    "lists": {
      "byPage": {"method": "GET", "path": "/page", "paging": {"style": "page", "size": 3},
                 "item": {"kind": "artist", "id": "/id", "following": true, "attributes": "", "keep": ["name"]},
                 "sections": {"pointer": "/name", "by": "firstLetter"}, "dependsOn": ["artist"]},
      "byOffset": {"method": "GET", "path": "/offset", "paging": {"style": "offset", "limit": 3},
                   "items": "/data", "item": {"kind": "artist", "id": "/id", "following": {"pointer": "/f"}},
                   "sections": {"pointer": "/c", "by": "value"}},
      "byCursor": {"method": "GET", "path": "/cursor", "paging": {"style": "cursor", "next": "/next"},
                   "items": "/data", "item": {"kind": "artist", "id": "/id"}},
      "byLink": {"method": "GET", "path": "/link", "paging": {"style": "link"}, "item": {"kind": "artist", "id": "/id"}}
    }
  }
  """#

/// The example configurations, read from the source tree this target was built from.
let exampleNames = ["artsy", "github", "graphql", "mastodon", "youtube", "bluesky"]

func exampleText(_ name: String) -> String {
  let root = String(#filePath.split(separator: "/Fuzz/FuzzRESTAnswers/").first!)
  guard let file = fopen("\(root)/examples/\(name)/config.json", "rb") else {
    fuzzFailure("cannot read examples/\(name)/config.json")
  }
  defer { fclose(file) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 4096)
  while true {
    let count = fread(&chunk, 1, chunk.count, file)
    if count == 0 { break }
    bytes += chunk[0..<count]
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// One configuration under test, with its backend (for the calls that need one).
struct Subject {
  let configuration: RESTConfiguration
  let backend: RESTBackend
  let kinds: [String]
  let lists: [String]

  init(_ text: String) {
    configuration = try! RESTConfiguration.parse(text)
    backend = RESTBackend(configuration: configuration, loop: loop, environmentVariables: { _ in "token" })
    // Reset headers in epoch seconds or dates are read against this, not the clock.
    backend.session.wallClock = { 1_764_600_000 }
    kinds = configuration.kinds.keys.sorted()
    lists = configuration.lists.keys.sorted()
  }
}

nonisolated(unsafe) let loop = try! EventLoop()
nonisolated(unsafe) let subjects = [Subject(configurationText)] + exampleNames.map { Subject(exampleText($0)) }
let bases = ["http://127.0.0.1:9/api/v1/link?page=2", "https://h.example", "http://h/", "relative/path", ""]
let commonStatuses = [200, 201, 204, 299, 301, 400, 401, 403, 404, 408, 409, 410, 429, 500, 503]
/// The ids of a batched read, in the order asked.
let asked = ["1", "2", "3"]

func checkMapping<T>(
  _ result: Result<T, FollowFailure>, status: Int, named: Bool, refusable: Bool = false,
  forbidden: RESTConfiguration.Forbidden, _ response: HTTPResponse
) {
  guard !named, case .failure(let failure) = result else { return }
  let retryAfter = response.retryAfter
  if let retryAfter, retryAfter > .seconds(3600) { fuzzFailure("Retry-After of \(retryAfter) is above the cap") }
  switch (status, failure.kind) {
  case (200...299, .unavailable): break  // the answer could not be read
  // Errors in the answer say which status they stand for; a batch that leaves an id out refuses it.
  case (200...299, _) where refusable: break
  case (200...299, _): fuzzFailure("\(status) became \(failure.kind)")
  case (401, .unauthorized): break
  // A 403 is a refusal when the configuration's `forbidden` reads it as one, else it waits for credentials.
  case (403, .rejected(403)) where forbidden.refusal(in: response) != nil: break
  case (403, .unauthorized) where forbidden.refusal(in: response) == nil: break
  case (408, .unavailable), (429, .unavailable), (500...599, .unavailable):
    if failure.retryAfter != retryAfter { fuzzFailure("\(status) lost its Retry-After") }
  case (401, _), (403, _), (408, _), (429, _), (500...599, _): fuzzFailure("\(status) became \(failure.kind)")
  case (_, .rejected(let rejected)) where rejected == status: break
  default: fuzzFailure("\(status) became \(failure.kind)")
  }
}

/// Whether `response`, a 2xx no status meaning names, can be read as `endpoint` says:
/// no errors where it looks for them, and (for `what`) the values it needs.
func readable(_ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint, _ what: (JSON?) -> Bool) -> Bool {
  let json = try? JSON.parse(response.body)
  if let errors = endpoint.errors, response.status != 204 && response.status != 205 {
    guard let json else { return false }
    if let found = json.value(at: errors.pointer), found.kind != .null,
      !(found.kind == .array && found.count == 0)
    {
      return false
    }
  }
  return what(json)
}

func isBoolean(_ json: JSON?, _ pointer: JSONPointer?) -> Bool {
  guard let pointer else { return true }
  return json?.value(at: pointer)?.bool != nil
}

/// A success from an answer the configuration cannot read is the one thing this must never give.
func checkRead<T>(
  _ result: Result<T, FollowFailure>, _ response: HTTPResponse, _ endpoint: RESTConfiguration.Endpoint,
  _ what: (JSON?) -> Bool
) {
  guard case .success = result, (200...299).contains(response.status), endpoint.meaning(of: response) == nil else {
    return
  }
  if !readable(response, endpoint, what) {
    fuzzFailure(
      "a \(response.status) answer of \(endpoint.method) \(endpoint.path) that says nothing sure was a success")
  }
}

/// A follow (`following`) or unfollow answer, read by `RESTFollows.changeAnswer`.
func readChange(_ subject: Subject, _ endpoint: RESTConfiguration.Endpoint, following: Bool, _ response: HTTPResponse)
  -> Result<FollowAnswer, FollowFailure>
{
  let answer = subject.backend.follows.changeAnswer(
    .success(response), endpoint, EntityKey(kind: "k", id: "1"), following)
  checkRead(answer, response, endpoint) { json in
    guard !endpoint.answer.isEmpty || (following && !endpoint.capture.isEmpty) else { return true }
    guard let json else { return false }
    if case .success(.following) = answer, !endpoint.capture.isEmpty,
      RESTSession.captured(endpoint.capture, in: json) == nil
    {
      return false
    }
    // A test of a value says yes or no of any answer; a boolean pointer needs its boolean.
    let following = endpoint.answer.followingTest != nil || isBoolean(json, endpoint.answer.following)
    return following && isBoolean(json, endpoint.answer.requested)
  }
  return answer
}

/// `RESTFollows.fetchFollowing`'s reading of a single state answer.
func readState(_ subject: Subject, _ state: RESTConfiguration.StateEndpoint, _ response: HTTPResponse)
  -> Result<FollowAnswer, FollowFailure>
{
  let backend = subject.backend
  let key = EntityKey(kind: "k", id: "1")
  let answer = backend.session.answer(
    .success(response), state.endpoint, meaning: { .success(FollowAnswer($0 == .following)) }
  ) { response in
    let answer = RESTFollows.stateAnswer(response, state)
    if case .success(.following) = answer, !state.endpoint.capture.isEmpty {
      backend.session.captureFromState(key, state.endpoint.capture, response)
    }
    return answer
  }
  if case .success(.notFollowing) = answer { backend.session.forgetCaptures(key) }
  checkRead(answer, response, state.endpoint) { json in
    switch state.following {
    case .success: break
    case .nonEmpty, .matches: if json == nil { return false }
    case .pointer(let pointer): if !isBoolean(json, pointer) { return false }
    }
    if case .success(.following) = answer { return true }
    return isBoolean(json, state.requested)
  }
  return answer
}

/// `RESTFollows.flush`'s reading of a batched state answer, for each id asked.
func readBatch(
  _ subject: Subject, kind: String, _ state: RESTConfiguration.Endpoint, _ batch: RESTConfiguration.Batch,
  _ response: HTTPResponse
) {
  let answers = subject.backend.follows.batchOutcome(.success(response), state, batch, ids: asked, kind: kind)
  let json = try? JSON.parse(response.body)
  let items = json?.value(at: batch.items).flatMap { $0.isArray ? $0.elements : nil }
  for id in asked {
    let answer = answers(id)
    // With a flag per item, an id the answer leaves out is refused (Mastodon leaves
    // out accounts it does not know).
    let item = items?.last { item in
      item.value(at: batch.id).flatMap { $0.string ?? $0.integer.map { String($0) } } == id
    }
    let leftOut = batch.flags.following != nil && items != nil && item == nil
    checkMapping(
      answer, status: response.status, named: state.meaning(of: response) != nil,
      refusable: state.errors != nil || leftOut, forbidden: subject.configuration.forbidden, response)
    checkRead(answer, response, state) { _ in
      guard let items else { return false }
      if batch.by == .position {
        return items.count == asked.count && items.allSatisfy { $0.bool != nil }
      }
      guard batch.flags.following != nil else { return true }
      // This id's own item must say it.
      guard let item else { return false }
      if batch.flags.followingTest == nil, !isBoolean(item, batch.flags.following) { return false }
      if case .success(.following) = answer { return true }
      return isBoolean(item, batch.flags.requested)
    }
  }
}

@main
struct FuzzRESTAnswers {
  static func main() {
    // Inputs are meant to fail: a warning per unreadable answer would only bury what
    // the fuzzer reports.
    Log.level = .error
    // Globals are made on first use: before the first input, or their allocations
    // would count as that input's leak.
    withoutLeakChecks { _ = (loop, subjects, bases, commonStatuses, asked) }
    runFuzzer { data in
      var reader = FuzzReader(data)
      let subject = subjects[Int(reader.byte()) % subjects.count]
      let configuration = subject.configuration
      let selector = Int(reader.byte())
      let high = Int(reader.byte())
      let low = Int(reader.byte())
      let status = high < 0x80 ? commonStatuses[low % commonStatuses.count] : 100 + (high << 8 | low) % 500
      let headers = reader.field()
      let response = HTTPResponse(status: status, headerBytes: headers, body: Array(reader.remaining))
      _ = response.headers
      _ = response.retryAfter
      defer { subject.backend.session.capturedValues = CapturedValues() }

      let kindName = subject.kinds[selector % subject.kinds.count]
      let kind = configuration.kinds[kindName]!
      let choice = (selector >> 2) % 4
      let endpoint = [kind.follow, kind.unfollow, kind.state.endpoint, kind.detail ?? kind.follow][choice]
      if let (wait, _) = subject.backend.session.rateLimitWait(response, endpoint), wait > ResetTime.longest {
        fuzzFailure("a rate limit wait of \(wait) is above \(ResetTime.longest)")
      }
      let named = endpoint.meaning(of: response) != nil
      if choice == 2, let batch = kind.state.batch {
        readBatch(subject, kind: kindName, endpoint, batch, response)
      } else {
        let result: Result<FollowAnswer, FollowFailure>
        switch choice {
        case 0, 1: result = readChange(subject, endpoint, following: choice == 0, response)
        case 2: result = readState(subject, kind.state, response)
        default:
          result = RESTSession.outcome(.success(response), endpoint) { _ in .success(.following) }
        }
        // `outcome` alone (choice 3) reads a 403 with the standard `forbidden`.
        checkMapping(
          result, status: status, named: named, refusable: endpoint.errors != nil,
          forbidden: choice == 3 ? .standard : configuration.forbidden, response)
      }

      guard !subject.lists.isEmpty else { return }
      let list = configuration.lists[subject.lists[(selector >> 4) % subject.lists.count]]!
      let base = bases[selector % bases.count]
      let tokens: [PageToken?] = [nil, .number(7), .offset(3), .cursor("c"), .url(base)]
      let page = subject.backend.session.answer(.success(response), list.endpoint) { response in
        RESTLists.readPage(response, list, tokens[(selector >> 1) % tokens.count], url: base)
      }
      checkMapping(
        page, status: status, named: list.endpoint.meaning(of: response) != nil, refusable: list.endpoint.errors != nil,
        forbidden: configuration.forbidden, response)
      if let link = response.header("Link"), let next = RESTLists.nextLink(link, base: base),
        base.hasPrefix("http"), !(next.hasPrefix("http://") || next.hasPrefix("https://"))
      {
        fuzzFailure("next link \(next) of \(base) is not absolute", input: data)
      }
      _ = RESTLists.sameOrigin(String(decoding: headers, as: UTF8.self), base)
    }
  }
}
