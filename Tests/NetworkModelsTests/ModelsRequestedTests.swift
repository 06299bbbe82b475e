import EventLoop
import NetworkModels
import Testing

/// An awaited follow that the backend answers with a request awaiting approval.
@Suite struct ModelsRequestedTests {
  @Test func anAwaitedFollowAnsweredRequestedIsAnsweredWithTheRequestNotAFollow() throws {
    let backend = EnvironmentBackend()
    let f = try ModelsFixture(backend: backend)
    let key = EntityKey(kind: "account", id: "7")
    var answer: Models.MutationOutcome?
    try f.models.setFollowing(key, true, awaitSettle: true) { answer = $0 }
    #expect(answer == nil)
    backend.inner.answer(with: .requested)
    guard case .state(let state)? = answer else {
      Issue.record("answered \(String(describing: answer))")
      return
    }
    #expect(state.requested && state.confirmed == false && state.following == false && !state.pending)
    #expect(f.changes.last == "account/7 following=false confirmed=false pending=false")
  }
}
