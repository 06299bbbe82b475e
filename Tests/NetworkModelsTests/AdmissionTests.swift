import EventLoop
import NetworkModels
import Testing

/// `Models.admit`: what the models refuse before anything changes, each refusal a
/// typed problem (the service maps it to -32602 or -32004 in one place).
@Suite struct AdmissionTests {
  final class Silent: ModelObserver {
    var changes = 0
    func modelChanged(_ change: Models.Change) { changes += 1 }
    func holds(_ entity: EntityKey) -> Bool { false }
    func holds(_ list: ListKey) -> Bool { false }
  }

  let observer = Silent()
  let models: Models

  init() throws {
    let loop = try EventLoop()
    let backend = RESTBackend(
      configuration: try RESTConfiguration.parse(RESTPlaceholderTests.configuration), loop: loop)
    models = Models(store: FollowStore(loop: loop, backend: backend), observer: observer)
  }

  func refusal(_ body: () throws(AdmissionProblem) -> Void) -> AdmissionProblem? {
    do {
      try body()
      return nil
    } catch {
      return error
    }
  }

  @Test func aMutationOfAKeyTheBackendCannotHaveOrSendChangesNothing() {
    var answered = false
    let unknown = refusal { () throws(AdmissionProblem) in
      try models.setFollowing(EntityKey(kind: "nokind", id: "x"), true, awaitSettle: false) { _ in answered = true }
    }
    guard case .unknownKind("nokind", _)? = unknown else {
      Issue.record("\(String(describing: unknown))")
      return
    }
    let dots = EntityKey(kind: "thing", id: "..")
    let unsendable = refusal { () throws(AdmissionProblem) in
      try models.setFollowing(dots, true, awaitSettle: true) { _ in answered = true }
    }
    guard case .invalid("/id", let reason)? = unsendable else {
      Issue.record("\(String(describing: unsendable))")
      return
    }
    #expect(reason.contains("dot segment"))
    #expect(!answered && observer.changes == 0 && models.store.state(dots).version == 0)
  }

  @Test func aListIsAdmittedWithExactlyItsParamsEachSmallAndSendable() {
    let pair = ListKey(name: "pair")
    #expect(
      refusal { () throws(AdmissionProblem) in try models.admit(list: pair, params: ["a": "x", "b": "y"]) } == nil)
    #expect(
      refusal { () throws(AdmissionProblem) in try models.admit(list: ListKey(name: "nope"), params: [:]) }
        == .unknownList("nope", known: ["pair"]), "the refusal names the lists there are")
    #expect(
      refusal { () throws(AdmissionProblem) in try models.admit(list: pair, params: ["a": "x"]) }
        == .invalid(path: "/params/b", reason: "list pair needs params.b"))
    let extra = refusal { () throws(AdmissionProblem) in
      try models.admit(list: pair, params: ["a": "x", "b": "y", "c/d": "z"])
    }
    guard case .invalid("/params/c~1d", _)? = extra else {
      Issue.record("\(String(describing: extra))")
      return
    }
    let long = String(repeating: "x", count: ListKey.maxParamBytes + 1)
    #expect(
      refusal { () throws(AdmissionProblem) in try models.admit(list: pair, params: ["a": long, "b": "y"]) }
        == .invalid(path: "/params/a", reason: "params.a is longer than 1024 bytes"))
    guard
      case .invalid("/params/a", _)? = refusal({ () throws(AdmissionProblem) in
        try models.admit(list: pair, params: ["a": ".", "b": "."])
      })
    else {
      Issue.record("a dot segment was admitted")
      return
    }
  }

  @Test func anEntityTopicIsCheckedForItsFormKindAndId() {
    #expect(refusal { () throws(AdmissionProblem) in try models.admit(kind: "thing", id: nil) } == nil)
    #expect(
      refusal { () throws(AdmissionProblem) in try models.admit(kind: "Thing", id: nil) }
        == .invalid(path: "/kind", reason: "kind must match ^[a-z][a-z0-9_-]{0,63}$"))
    guard
      case .unknownKind("nokind", _)? = refusal({ () throws(AdmissionProblem) in
        try models.admit(kind: "nokind", id: "x")
      })
    else {
      Issue.record("an unknown kind was admitted")
      return
    }
    guard
      case .invalid("/id", _)? = refusal({ () throws(AdmissionProblem) in try models.admit(kind: "thing", id: "..") })
    else {
      Issue.record("a dot segment was admitted")
      return
    }
  }
}
