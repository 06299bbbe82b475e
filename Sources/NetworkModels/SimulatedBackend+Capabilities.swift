/// A simulated backend's lists and details: each page and detail call is delayed and
/// may fail, as its follows are.
struct SimulatedLists: ListSource {
  let simulation: SimulatedBackend
  let wrapped: ListSource

  func listDescription(_ name: String) -> ListDescription? { wrapped.listDescription(name) }
  var listNames: [String] { wrapped.listNames }

  func fetchListPage(_ request: ListPageRequest, completion: @escaping (Result<ListPage, FollowFailure>) -> Void) {
    simulation.simulate("page of \(request.key)", completion: completion) { [wrapped] done in
      wrapped.fetchListPage(request, completion: done)
    }
  }
}

struct SimulatedDetails: DetailSource {
  let simulation: SimulatedBackend
  let wrapped: DetailSource

  func hasDetail(kind: String) -> Bool { wrapped.hasDetail(kind: kind) }

  func fetchDetail(_ key: EntityKey, completion: @escaping (Result<String, FollowFailure>) -> Void) {
    simulation.simulate("detail of \(key)", completion: completion) { [wrapped] done in
      wrapped.fetchDetail(key, completion: done)
    }
  }
}
