import JSON

/// Fills `{id}`, `{kind}` and `{ids}` into the parts of an endpoint, encoding each
/// value for where it goes.
enum Template {
  /// The names of the `{…}` placeholders in `text`, in order.
  static func placeholders(in text: String) -> [String] {
    var names: [String] = []
    var rest = Substring(text)
    while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
      names.append(String(rest[rest.index(after: open)..<close]))
      rest = rest[rest.index(after: close)...]
    }
    return names
  }

  /// `text` with each `{name}` replaced by `encode(values[name])`; unknown names stay.
  static func fill(_ text: String, _ values: [String: String], encode: (String) -> String) -> String {
    guard text.contains("{") else { return text }
    var result = ""
    var rest = Substring(text)
    while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
      result += rest[..<open]
      let name = String(rest[rest.index(after: open)..<close])
      if let value = values[name] { result += encode(value) } else { result += rest[open...close] }
      rest = rest[rest.index(after: close)...]
    }
    return result + rest
  }

  /// RFC 3986 percent-encoding of everything but the unreserved characters (and
  /// those in `keep`), so an id can never add a path segment or a query parameter.
  static func percentEncode(_ text: String, keep: String = "") -> String {
    var result = ""
    for byte in text.utf8 {
      let scalar = Unicode.Scalar(byte)
      if (byte < 0x80 && (scalar.properties.isAlphabetic || (0x30...0x39).contains(byte)))
        || "-._~".unicodeScalars.contains(scalar) || keep.unicodeScalars.contains(scalar)
      {
        result.unicodeScalars.append(scalar)
      } else {
        result += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
      }
    }
    return result
  }

  /// `name=value&…` with `{ids}` values repeated per id. Brackets stay readable in
  /// names (`artists[]`), as Rails-style APIs document them.
  static func encodeParameters(_ parameters: [(name: String, value: String)], _ values: [String: String], ids: [String])
    -> String
  {
    var pairs: [String] = []
    for (name, value) in parameters {
      let encodedName = percentEncode(name, keep: "[]")
      if value == "{ids}" {
        for id in ids { pairs.append(encodedName + "=" + percentEncode(id)) }
      } else {
        pairs.append(encodedName + "=" + fill(value, values, encode: { percentEncode($0) }))
      }
    }
    return pairs.joined(separator: "&")
  }

  /// A copy of a JSON body template with its strings filled in.
  static func fill(json template: JSON, _ values: [String: String], ids: [String]) -> JSON {
    switch template.kind {
    case .string:
      let text = template.string ?? ""
      if text == "{ids}" {
        let array = JSON.array()
        for id in ids { array.append(.string(id)) }
        return array
      }
      return .string(fill(text, values, encode: { $0 }))
    case .object:
      let object = JSON.object()
      for (key, value) in template.members { object.set(key, fill(json: value, values, ids: ids)) }
      return object
    case .array:
      let array = JSON.array()
      for value in template.elements { array.append(fill(json: value, values, ids: ids)) }
      return array
    default:
      return template
    }
  }
}
