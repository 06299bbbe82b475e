import JSON
import JSONRPC
import NetworkModels
import Posix

extension NetmodelService {
  /// The store tells the ledger of each intent's life; the ledger's outcomes go to the
  /// `mutations` topic. Unowned (see `init`): `deinit` takes the store's hook back.
  func connectLedger() {
    store.onMutation = { [unowned ledger] key, event in ledger.note(key, event) }
    ledger.environment = { [unowned self] in self.models.environments?.environment }
    ledger.onOutcome = { [unowned subscriptions] entry in subscriptions.publish(mutation: entry) }
  }
}

extension MutationEntry: EncodableResult {
  /// `MutationEntry` of docs/protocol.md: times in RFC 3339, the failure as a state's
  /// `error` shows it.
  public func encode(into buffer: inout [UInt8]) {
    appendLiteral(#"{"seq":"#, to: &buffer)
    appendDecimal(Int64(seq), to: &buffer)
    appendLiteral(#","kind":"#, to: &buffer)
    appendJSONString(key.kind, to: &buffer)
    appendLiteral(#","id":"#, to: &buffer)
    appendJSONString(key.id, to: &buffer)
    appendLiteral(intent ? #","intent":true"# : #","intent":false"#, to: &buffer)
    appendLiteral(#","outcome":""#, to: &buffer)
    appendLiteral(outcome.literal, to: &buffer)
    appendLiteral(#"","acceptedAt":""#, to: &buffer)
    buffer.append(contentsOf: RFC3339.milliseconds(since1970: acceptedAtMs).utf8)
    buffer.append(UInt8(ascii: "\""))
    if let settledAtMs {
      appendLiteral(#","settledAt":""#, to: &buffer)
      buffer.append(contentsOf: RFC3339.milliseconds(since1970: settledAtMs).utf8)
      buffer.append(UInt8(ascii: "\""))
    }
    appendLiteral(#","attempts":"#, to: &buffer)
    appendDecimal(Int64(attempts), to: &buffer)
    if let client {
      appendLiteral(#","client":"#, to: &buffer)
      appendJSONString(client, to: &buffer)
    }
    if let environment {
      appendLiteral(#","environment":"#, to: &buffer)
      appendJSONString(environment, to: &buffer)
    }
    if let failure {
      appendLiteral(#","error":"#, to: &buffer)
      failure.encodeErrorObject(into: &buffer)
    }
    buffer.append(UInt8(ascii: "}"))
  }
}
