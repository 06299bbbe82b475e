import JSON

/// Fills `{id}`, `{kind}` and `{ids}` into the parts of an endpoint, encoding each
/// value for where it goes.
enum Template {
  /// The names of the `{…}` placeholders in `text`, in order. `{{` and `}}` are a
  /// literal brace, never a placeholder (GraphQL text and JSON in a value need them).
  static func placeholders(in text: String) -> [String] {
    var names: [String] = []
    let bytes = Array(text.utf8)
    var index = 0
    while index < bytes.count {
      if bytes[index] == UInt8(ascii: "{") {
        if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "{") {
          index += 2
          continue
        }
        guard let close = bytes[index...].firstIndex(of: UInt8(ascii: "}")) else { break }
        names.append(String(decoding: bytes[(index + 1)..<close], as: UTF8.self))
        index = close + 1
      } else {
        index += 1
      }
    }
    return names
  }

  /// `text` with each `{name}` replaced by `encode(values[name])`; unknown names stay;
  /// `{{` and `}}` become `{` and `}`. Works on UTF-8 bytes: it runs for every request.
  static func fill(_ text: String, _ values: [String: String], encode: (String) -> String) -> String {
    fill(text, prefix: "", value: { values[$0] }, encode: encode)
  }

  /// `prefix` + `fill` with a single read's own values, `{kind}` and `{id}`, without a
  /// dictionary made for them (hashing both names, for every read). The prefix (the base
  /// URL) goes into the same buffer: adding it after took another string a request.
  static func fill(_ text: String, prefix: String = "", kind: String, id: String, encode: (String) -> String)
    -> String
  {
    fill(text, prefix: prefix, value: { $0 == "id" ? id : $0 == "kind" ? kind : nil }, encode: encode)
  }

  /// `prefix` + `text` filled with `value(name)` for each `{name}` (nil: the
  /// placeholder stays).
  static func fill(_ text: String, prefix: String = "", value: (String) -> String?, encode: (String) -> String)
    -> String
  {
    // A native string's bytes are borrowed rather than copied into an array: every
    // request fills its endpoint's path.
    if let filled = text.utf8.withContiguousStorageIfAvailable({
      fill(text, prefix: prefix, bytes: $0, value, encode: encode)
    }) {
      return filled
    }
    return Array(text.utf8).withUnsafeBufferPointer { fill(text, prefix: prefix, bytes: $0, value, encode: encode) }
  }

  /// `bytes` are `text`'s.
  private static func fill(
    _ text: String, prefix: String, bytes: UnsafeBufferPointer<UInt8>, _ values: (String) -> String?,
    encode: (String) -> String
  ) -> String {
    let open = UInt8(ascii: "{")
    let close = UInt8(ascii: "}")
    guard let first = bytes.firstIndex(where: { $0 == open || $0 == close }) else { return prefix + text }
    var result: [UInt8] = []
    result.reserveCapacity(prefix.utf8.count + bytes.count + 32)
    result.append(contentsOf: prefix.utf8)
    result.append(contentsOf: bytes[..<first])
    var index = first
    while index < bytes.count {
      let byte = bytes[index]
      if (byte == open || byte == close), index + 1 < bytes.count, bytes[index + 1] == byte {
        result.append(byte)
        index += 2
      } else if byte == open, let end = bytes[index...].firstIndex(of: close) {
        let name = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
        if let value = values(name) {
          result.append(contentsOf: encode(value).utf8)
        } else if name.hasSuffix("*"), let value = values(String(name.dropLast())) {
          // RFC 6570's explode: the value's "/"-separated parts are path segments,
          // each encoded (a GitHub repository id `owner/repo`).
          let parts = value.split(separator: "/", omittingEmptySubsequences: false)
          result.append(contentsOf: parts.map { encode(String($0)) }.joined(separator: "/").utf8)
        } else {
          result.append(contentsOf: bytes[index...end])
        }
        index = end + 1
      } else {
        result.append(byte)
        index += 1
      }
    }
    return String(decoding: result, as: UTF8.self)
  }

  /// RFC 3986 percent-encoding of everything but the unreserved characters (and
  /// those in `keep`), so an id can never add a path segment or a query parameter.
  static func percentEncode(_ text: String, keep: String = "") -> String {
    let keepBytes = Array(keep.utf8)
    func plain(_ byte: UInt8) -> Bool {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"),
        UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
        return true
      default:
        return keepBytes.contains(byte)
      }
    }
    if text.utf8.allSatisfy(plain) { return text }
    let hex = Array("0123456789ABCDEF".utf8)
    var result: [UInt8] = []
    result.reserveCapacity(text.utf8.count * 3)
    for byte in text.utf8 {
      if plain(byte) {
        result.append(byte)
      } else {
        result.append(UInt8(ascii: "%"))
        result.append(hex[Int(byte >> 4)])
        result.append(hex[Int(byte & 15)])
      }
    }
    return String(decoding: result, as: UTF8.self)
  }

  /// `name=value&…` with `{ids}` values repeated per id, or, with `join`, one value of
  /// the encoded ids joined by it (unencoded: `ids=a,b%2Cc`). Brackets stay readable in
  /// names (`artists[]`), as Rails-style APIs document them.
  static func encodeParameters(
    _ parameters: [(name: String, value: String)], _ values: [String: String], ids: [String], join: String? = nil
  ) -> String {
    var pairs: [String] = []
    for (name, value) in parameters {
      let encodedName = percentEncode(name, keep: "[]")
      if value == "{ids}", let join {
        pairs.append(encodedName + "=" + ids.map { percentEncode($0) }.joined(separator: join))
      } else if value == "{ids}" {
        for id in ids { pairs.append(encodedName + "=" + percentEncode(id)) }
      } else {
        // Encoded whole, literal text too: a literal brace (`{{`) or space is no URL character.
        pairs.append(encodedName + "=" + percentEncode(fill(value, values, encode: { $0 })))
      }
    }
    return pairs.joined(separator: "&")
  }

  /// A copy of a JSON body template with its strings filled in; `"{ids}"` becomes the
  /// array of ids, or with `join` one string of them joined.
  static func fill(json template: JSON, _ values: [String: String], ids: [String], join: String? = nil) -> JSON {
    switch template.kind {
    case .string:
      let text = template.string ?? ""
      if text == "{ids}", let join { return .string(ids.joined(separator: join)) }
      if text == "{ids}" {
        let array = JSON.array()
        for id in ids { array.append(.string(id)) }
        return array
      }
      return .string(fill(text, values, encode: { $0 }))
    case .object:
      let object = JSON.object()
      for (key, value) in template.members { object.set(key, fill(json: value, values, ids: ids, join: join)) }
      return object
    case .array:
      let array = JSON.array()
      for value in template.elements { array.append(fill(json: value, values, ids: ids, join: join)) }
      return array
    default:
      return template
    }
  }
}

extension Template {
  /// Why `values` cannot fill the path template `path`: a value that goes into it is
  /// empty, or the segment it fills is "." or "..". Those cannot be sent meaning
  /// themselves: clients and servers resolve dot segments (RFC 3986 §5.2.4), and
  /// their encoded form %2E is the same segment (§6.2.2.2), so an id ".." would call
  /// the parent resource with the user's token. The configuration has no dot segment
  /// of its own (`hasDotSegment`), so only a value can make one. Nil when every value
  /// lands as the segment it was meant to be; else the placeholder at fault.
  static func pathProblem(_ path: String, _ values: [String: String]) -> (name: String, reason: String)? {
    // Runs for every request: only a value made of dots alone (or empty), or one
    // split into segments (`{id*}`), can do harm.
    let exploding = path.utf8.contains(UInt8(ascii: "*"))
    guard exploding || values.values.contains(where: onlyDots) else { return nil }
    var names: [(name: String, segments: [Substring])] = []
    for placeholder in placeholders(in: path) {
      let name = placeholder.hasSuffix("*") ? String(placeholder.dropLast()) : placeholder
      guard let value = values[name] else { continue }
      let segments =
        placeholder.hasSuffix("*") ? value.split(separator: "/", omittingEmptySubsequences: false) : [value[...]]
      if segments.contains(where: { onlyDots(String($0)) }) { names.append((name, segments)) }
    }
    if let empty = names.first(where: { $0.segments.contains(where: \.isEmpty) }) {
      let reason =
        empty.segments.count > 1
        ? "must not have an empty segment (\"//\", or \"/\" first or last): it fills segments of the path \(path)"
        : "must not be empty: it fills a segment of the path \(path)"
      return (empty.name, reason)
    }
    let filled = fill(path, values, encode: { percentEncode($0) })
    guard let first = names.first, hasDotSegment(filled) else { return nil }
    let value = values[first.name] ?? ""
    let what = first.segments.count > 1 ? "segments" : "a segment"
    return (
      first.name,
      "\"\(value)\" cannot be sent as \(what) of the path \(path): \".\" and \"..\" are dot segments, "
        + "which HTTP clients and servers resolve to another resource (RFC 3986 §5.2.4; %2E is the same, §6.2.2.2)"
    )
  }

  /// Whether the path part of `text` (before any `?`) has a segment that is `.` or
  /// `..`, also written `%2E` (either case).
  static func hasDotSegment(_ text: String) -> Bool {
    let pathPart = text.utf8.prefix { $0 != UInt8(ascii: "?") }
    for segment in pathPart.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
      var rest = segment[...]
      var dots = 0
      while !rest.isEmpty && dots <= 2 {
        if rest.first == UInt8(ascii: ".") {
          rest = rest.dropFirst()
        } else if rest.count >= 3, rest.first == UInt8(ascii: "%"), rest.dropFirst().first == UInt8(ascii: "2"),
          rest.dropFirst(2).first.map({ $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) == true
        {
          rest = rest.dropFirst(3)
        } else {
          break
        }
        dots += 1
      }
      if rest.isEmpty && (1...2).contains(dots) { return true }
    }
    return false
  }

  private static func onlyDots(_ value: String) -> Bool { value.utf8.allSatisfy { $0 == UInt8(ascii: ".") } }
}
