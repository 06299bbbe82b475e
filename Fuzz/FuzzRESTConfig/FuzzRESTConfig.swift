// `RESTConfiguration.parse` (what `check-config` and `--config` run) on arbitrary text.
// Oracles: parsing never traps, and nothing it accepts traps at use: a backend made
// from it builds every endpoint's request (ids that need encoding, dot segments,
// batches, lists with their params, every environment) and reads a small answer with
// each of its pointers.

import EventLoop
import FuzzSupport
import HTTP
import JSON

@testable import NetworkModels

nonisolated(unsafe) let loop = try! EventLoop()
/// Plain, needing percent-encoding (and a placeholder's braces), a dot segment, non-ASCII
/// with a NUL: four, since every accepted configuration builds each endpoint for each.
let ids = ["1", "a b/c?d#e%{id}", "..", "é\u{0}\u{1F600}"]

func use(_ configuration: RESTConfiguration) {
  let backend = RESTBackend(configuration: configuration, loop: loop, environmentVariables: { _ in "token" })
  // Environments differ only in their base URL: each builds one request per endpoint,
  // the first one everything (a third of the time went to building artsy's three
  // environments' requests alike).
  for (name, _) in configuration.environments.dropFirst() {
    _ = backend.session.selectEnvironment(name)
    for (kind, endpoints) in configuration.kinds
    where backend.follows.validatePlaceholders(kind: kind, id: ids[0]) == nil {
      for endpoint in [endpoints.follow, endpoints.unfollow, endpoints.state.endpoint]
        + [endpoints.detail].compactMap({ $0 })
      {
        _ = backend.session.request(endpoint, kind: kind, id: ids[0])
      }
    }
    for (name, list) in configuration.lists {
      let params = Dictionary(list.params.map { ($0, ids[0]) }, uniquingKeysWith: { a, _ in a })
      if backend.follows.validatePlaceholders(list: name, params: params) == nil {
        _ = backend.session.request(list.endpoint, values: params)
      }
    }
  }
  for (name, _) in configuration.environments.prefix(1) {
    _ = backend.session.selectEnvironment(name)
    for (kind, endpoints) in configuration.kinds {
      _ = backend.kindProblem(kind)
      for id in ids {
        guard backend.follows.validatePlaceholders(kind: kind, id: id) == nil else { continue }
        for endpoint in [endpoints.follow, endpoints.unfollow, endpoints.state.endpoint]
          + [endpoints.detail].compactMap({ $0 })
        {
          _ = backend.session.request(endpoint, kind: kind, id: id)
        }
      }
      if endpoints.state.batch != nil { _ = backend.session.request(endpoints.state.endpoint, kind: kind, ids: ids) }
      let answer = HTTPResponse(status: 200, body: Array(#"{"a":[{"id":"1"}],"b":true}"#.utf8))
      _ = RESTFollows.following(in: answer, endpoints.state.following)
      if let batch = endpoints.state.batch { _ = RESTFollows.followedIDs(in: answer, batch) }
    }
    for (name, list) in configuration.lists {
      _ = backend.lists.listDescription(name)
      for id in ids {
        let params = Dictionary(list.params.map { ($0, id) }, uniquingKeysWith: { a, _ in a })
        guard backend.follows.validatePlaceholders(list: name, params: params) == nil else { continue }
        _ = backend.session.request(list.endpoint, values: params)
      }
      let answer = HTTPResponse(
        status: 200, headers: [("Link", "</next>; rel=\"next\"")], body: Array(#"[{"id":"1","name":"x"}]"#.utf8))
      _ = RESTLists.readPage(answer, list, nil, url: "http://h/p")
      // A next page: an offset one with `overlap` reads its first element apart.
      _ = RESTLists.readPage(answer, list, .offset(1), url: "http://h/p")
    }
  }
}

@main
struct FuzzRESTConfig {
  static func main() {
    // Globals are made on first use: before the first input, or their allocations
    // would count as that input's leak.
    withoutLeakChecks { _ = (loop, ids) }
    runFuzzer { bytes in
      guard let configuration = try? RESTConfiguration.parse(utf8: bytes) else { return }
      use(configuration)
    }
  }
}
