// Reading REST answers: one input is an answer to one endpoint of a fixed
// configuration. Byte 0 picks the endpoint (and the Link base URL), bytes 1-2 the
// status (a few common ones, or any 100...599), then headers up to a NUL byte (as
// received: `Name: value` lines), then the body.
//
// Oracles: nothing traps; the status mapping holds (2xx without a configured meaning
// is success or an unreadable-answer failure, never rejected or unauthorized; 401/403
// unauthorized; 408/429/5xx unavailable, with Retry-After capped at an hour; other
// 4xx rejected); a next-page Link is resolved to an absolute URL.

import EventLoop
import FuzzSupport
import JSON

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

let configuration = try! RESTConfiguration.parse(configurationText)
let kinds = configuration.kinds.keys.sorted()
let lists = configuration.lists.keys.sorted()
let bases = ["http://127.0.0.1:9/api/v1/link?page=2", "https://h.example", "http://h/", "relative/path", ""]
let commonStatuses = [200, 201, 204, 299, 301, 400, 401, 403, 404, 408, 409, 410, 429, 500, 503]

func checkMapping<T>(_ result: Result<T, FollowFailure>, status: Int, named: Bool, _ response: HTTPResponse) {
  guard !named, case .failure(let failure) = result else { return }
  let retryAfter = response.retryAfter
  if let retryAfter, retryAfter > .seconds(3600) { fuzzFailure("Retry-After of \(retryAfter) is above the cap") }
  switch (status, failure.kind) {
  case (200...299, .unavailable): break  // the answer could not be read
  case (200...299, _): fuzzFailure("\(status) became \(failure.kind)")
  case (401, .unauthorized), (403, .unauthorized): break
  case (408, .unavailable), (429, .unavailable), (500...599, .unavailable):
    if failure.retryAfter != retryAfter { fuzzFailure("\(status) lost its Retry-After") }
  case (401, _), (403, _), (408, _), (429, _), (500...599, _): fuzzFailure("\(status) became \(failure.kind)")
  case (_, .rejected(let rejected)) where rejected == status: break
  default: fuzzFailure("\(status) became \(failure.kind)")
  }
}

@main
struct FuzzRESTAnswers {
  static func main() {
    // Globals are made on first use: before the first input, or their allocations
    // would count as that input's leak.
    withoutLeakChecks { _ = (configuration, kinds, lists, bases, commonStatuses) }
    runFuzzer { data in
      var reader = FuzzReader(data)
      let selector = Int(reader.byte())
      let high = Int(reader.byte())
      let low = Int(reader.byte())
      let status = high < 0x80 ? commonStatuses[low % commonStatuses.count] : 100 + (high << 8 | low) % 500
      let headers = reader.field()
      let response = HTTPResponse(status: status, headerBytes: headers, body: Array(reader.remaining))
      _ = response.headers
      _ = response.retryAfter

      let kind = configuration.kinds[kinds[selector % kinds.count]]!
      let choice = (selector >> 2) % 4
      let endpoint = [kind.follow, kind.unfollow, kind.state.endpoint, kind.detail ?? kind.follow][choice]
      let named = endpoint.statusMeanings[status] != nil
      let result: Result<FollowAnswer, FollowFailure> = RESTBackend.outcome(
        .success(response), endpoint, meaning: { .success(FollowAnswer($0 == .following)) }
      ) { response in
        if let batch = kind.state.batch, choice == 2 {
          return RESTBackend.followedIDs(in: response, batch).map { FollowAnswer(!$0.isEmpty) }
        }
        if choice < 2 { return RESTBackend.mutationAnswer(response, endpoint, following: choice == 0) }
        return RESTBackend.stateAnswer(response, kind.state)
      }
      checkMapping(result, status: status, named: named, response)

      let list = configuration.lists[lists[(selector >> 4) % lists.count]]!
      let base = bases[selector % bases.count]
      let tokens: [PageToken?] = [nil, .number(7), .offset(3), .cursor("c"), .url(base)]
      let page = RESTBackend.outcome(.success(response), list.endpoint) { response in
        RESTBackend.readPage(response, list, tokens[(selector >> 1) % tokens.count], url: base)
      }
      checkMapping(page, status: status, named: false, response)
      if let link = response.header("Link"), let next = RESTBackend.nextLink(link, base: base),
        base.hasPrefix("http"), !(next.hasPrefix("http://") || next.hasPrefix("https://"))
      {
        fuzzFailure("next link \(next) of \(base) is not absolute", input: data)
      }
      _ = RESTBackend.sameOrigin(String(decoding: headers, as: UTF8.self), base)
    }
  }
}
