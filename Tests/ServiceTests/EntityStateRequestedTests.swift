import Service
import Testing

@testable import NetworkModels

/// `requested` on the wire: present (true) only for a follow request awaiting approval,
/// so every other state's text stays as it was.
@Suite struct EntityStateRequestedTests {
  private func text(_ state: EntityState) -> String {
    var buffer: [UInt8] = []
    state.encode(into: &buffer)
    return String(decoding: buffer, as: UTF8.self)
  }

  private let key = EntityKey(kind: "account", id: "7")

  @Test func aRequestIsWrittenTrueBesidePending() {
    let settled = EntityState(
      key: key, following: false, confirmed: false, pending: false, requested: true, error: nil, version: 3)
    #expect(
      text(settled)
        == #"{"kind":"account","id":"7","following":false,"confirmed":false,"pending":false,"requested":true,"#
        + #""error":null,"attributes":null,"version":3}"#)
    var withError = settled
    withError.pending = true
    withError.error = FollowFailure(.unavailable, "HTTP 503")
    #expect(text(withError).contains(#""pending":true,"requested":true,"error":{"code":-32001"#))
  }

  @Test func anyOtherStateHasNoRequestedMember() {
    let plain = EntityState(key: key, following: true, confirmed: true, pending: false, error: nil, version: 1)
    #expect(
      text(plain)
        == #"{"kind":"account","id":"7","following":true,"confirmed":true,"pending":false,"error":null,"#
        + #""attributes":null,"version":1}"#)
    var pending = plain
    pending.pending = true
    #expect(!text(pending).contains("requested"))
  }
}
