import JSON

/// `JSONDocument` against jansson (`JSON.parse`), for `JSONDocumentTests` and FuzzJSON.
public enum DocumentCheck {
  /// `JSONDocument` against jansson (`JSON.parse`): both refuse, with jansson's error, or
  /// both accept and every value of the document is jansson's (kinds, members in
  /// jansson's order, duplicates resolved as jansson does, decoded strings byte for
  /// byte, integers, booleans, `owned` equal to jansson's value), and each value knows
  /// its parent, key and position. Nil when they agree; otherwise what differs.
  /// `owned` is compared down to `ownedDepth` levels (each is a jansson parse of the
  /// value: on deep nesting, quadratic).
  public static func disagreement(_ bytes: UnsafeRawBufferPointer, ownedDepth: Int = .max) -> String? {
    let reference = Result { () throws(JSONError) in try JSON.parse(bytes) }
    let read = Result { () throws(JSONError) in try JSONDocument.parse(bytes) }
    switch (reference, read) {
    case (.failure(let expected), .failure(let error)):
      return error.description == expected.description ? nil : "error \(error), jansson's \(expected)"
    case (.failure(let expected), .success):
      return "the document accepts what jansson refuses (\(expected))"
    case (.success, .failure(let error)):
      return "jansson accepts what the document refuses (\(error))"
    case (.success(let json), .success(let document)):
      if let problem = withExtendedLifetime(document, { valueDisagreement(document.root, json, "", ownedDepth) }) {
        return problem
      }
      // The same, read without a copy of the text.
      guard let borrowing = try? JSONDocument.parse(borrowing: bytes) else { return "refused when borrowed" }
      return withExtendedLifetime(borrowing) { valueDisagreement(borrowing.root, json, "", ownedDepth) }
    }
  }

  private static func valueDisagreement(
    _ value: JSONDocument.Value, _ json: JSON, _ path: String, _ ownedDepth: Int
  ) -> String? {
    guard value.kind == json.kind else { return "\(path): \(value.kind), jansson has \(json.kind)" }
    guard value.count == json.count else { return "\(path): count \(value.count), jansson has \(json.count)" }
    switch json.kind {
    case .object:
      let members = Array(value.members)
      let expected = json.members
      guard members.map({ Array($0.key.utf8) }) == expected.map({ Array($0.key.utf8) }) else {
        return "\(path): keys \(members.map(\.key)), jansson has \(expected.map(\.key))"
      }
      for ((key, member), (_, expectedValue)) in zip(members, expected) {
        guard member.parent == value, member.key.map({ Array($0.utf8) }) == Array(key.utf8) else {
          return "\(path)/\(key): parent or key wrong"
        }
        guard value[key] == member else { return "\(path): [\(key)] is not the member iterated" }
        if let problem = valueDisagreement(member, expectedValue, "\(path)/\(key)", ownedDepth - 1) { return problem }
      }
      if value["\u{1}absent"] != nil { return "\(path): finds an absent key" }
    case .array:
      let elements = Array(value.elements)
      guard elements.count == json.count else { return "\(path): \(elements.count) elements iterated" }
      for (index, element) in elements.enumerated() {
        guard element.parent == value, element.key == nil, element.position == index else {
          return "\(path)/\(index): parent, key or position wrong"
        }
        if let problem = valueDisagreement(element, json[index]!, "\(path)/\(index)", ownedDepth - 1) { return problem }
      }
    case .string:
      guard let string = value.string, let expected = json.string, string.utf8.elementsEqual(expected.utf8) else {
        return "\(path): string \(String(reflecting: value.string)), jansson has \(String(reflecting: json.string))"
      }
    case .integer:
      guard value.integer == json.integer else { return "\(path): integer \(String(describing: value.integer))" }
    case .bool:
      guard value.bool == json.bool else { return "\(path): bool \(String(describing: value.bool))" }
    case .real, .null:
      break
    }
    if json.kind != .integer && value.integer != nil { return "\(path): an integer that is none" }
    if json.kind != .string && value.string != nil { return "\(path): a string that is none" }
    if json.kind != .bool && value.bool != nil { return "\(path): a bool that is none" }
    guard ownedDepth <= 0 || value.owned == json else {
      return "\(path): owned is \(value.owned.encoded()), jansson has \(json.encoded())"
    }
    return nil
  }
}
