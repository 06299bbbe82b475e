import JSON

/// The dispatcher's envelope scan (`JSONScanner.scanEnvelope`) against the general one
/// (`scanObjectMembers(_:withMembersOf: "params")`), for the unit tests and the JSON
/// fuzzer: both must give the same verdict, the same error, and the same members.
public enum EnvelopeCheck {
  /// Nil when both scans agree on `bytes`; otherwise what differs.
  public static func disagreement(_ bytes: UnsafeRawBufferPointer, workspace: JSONScanner.Workspace) -> String? {
    let general = Result { () throws(JSONError) in try JSONScanner.scanObjectMembers(bytes, withMembersOf: "params") }
    let envelope = Result { () throws(JSONError) in try JSONScanner.scanEnvelope(bytes, reusing: workspace) }
    switch (general, envelope) {
    case (.failure(let expected), .failure(let got)):
      guard expected.message == got.message, expected.position == got.position else {
        return "errors differ: \(expected) / \(got)"
      }
      return nil
    case (.success(nil), .success(nil)):
      return nil
    case (.success(let (object, nested)?), .success(let envelope?)):
      let pairs: [(String, JSONScanner.Entry?)] = [
        ("id", envelope.id), ("method", envelope.method), ("params", envelope.params),
      ]
      for (name, got) in pairs {
        let expected = object.entry(JSONScanner.Key(name))
        guard expected?.range == got?.range, expected?.kind == got?.kind,
          expected?.integerValue == got?.integerValue, expected?.isEmptyContainer == got?.isEmptyContainer
        else { return "\(name) differs" }
        if let expected, let got {
          let a = object.stringValue(expected)
          let b = envelope.stringValue(got)
          guard a?.utf8.elementsEqual(b?.utf8 ?? "".utf8) ?? (b == nil) else { return "\(name)'s string differs" }
        }
      }
      let isVersion2 = object.entry("jsonrpc").map { object.hasStringValue($0, "2.0") } ?? false
      guard isVersion2 == envelope.isVersion2 else { return "jsonrpc differs" }
      guard (object.entry("result") != nil) == envelope.hasResult, (object.entry("error") != nil) == envelope.hasError
      else { return "result or error differs" }
      guard nested?.members.map(\.range) == envelope.paramsMembers?.members.map(\.range),
        nested?.members.map(\.key) == envelope.paramsMembers?.members.map(\.key)
      else { return "params' members differ" }
      return nil
    default:
      return "verdicts differ: \(general) / \(envelope)"
    }
  }
}
