import JSON

/// The fields of issue 11's answers-into-requests constructs: `capture` on a follow or
/// state endpoint, and a batch's `join` and `by`.
extension Field {
  /// Names the built-in placeholders keep: a captured value must not replace the
  /// entity's own id (or the batch's ids) in a request.
  static let builtInPlaceholders: Set<String> = ["id", "ids", "kind", "now"]

  /// `"capture": {"subscriptionId": "/id"}`: name → pointer into a 2xx answer (into each
  /// item of a batched state answer). A by-position batch answers booleans, which hold
  /// nothing to capture.
  func captures(batch: RESTConfiguration.Batch?) throws(RESTConfigurationError) -> [RESTConfiguration.Capture] {
    guard let field = optional("capture") else { return [] }
    if batch?.by == .position {
      throw field.error("a batch read by position answers a boolean per id: it holds no value to capture")
    }
    var captures: [RESTConfiguration.Capture] = []
    for (name, pointer) in try field.members() {
      guard Field.isPlaceholderName(name) else {
        throw pointer.error("a capture name is a placeholder name: a letter, then letters, digits or _")
      }
      guard !Field.builtInPlaceholders.contains(name) else {
        throw pointer.error("would shadow the built-in {\(name)}: choose another name")
      }
      captures.append(try pointer.capture(name: name))
    }
    guard !captures.isEmpty else { throw field.error("must name at least one value to capture") }
    return captures
  }

  /// A pointer, or `{"pointer": P, "pattern": R, "segment": "last"}` (`pattern`,
  /// `segment` or both): the part of the value the unfollow needs (Bluesky's rkey, the
  /// last segment of an at-uri).
  func capture(name: String) throws(RESTConfigurationError) -> RESTConfiguration.Capture {
    guard json.kind == .object else { return RESTConfiguration.Capture(name: name, pointer: try pointer()) }
    try allow(["pointer", "pattern", "segment"])
    var capture = RESTConfiguration.Capture(name: name, pointer: try required("pointer").pointer())
    if let field = optional("pattern") {
      let text = try field.string()
      do {
        capture.pattern = RESTConfiguration.CapturePattern(
          text: text, regex: try Regex(text, as: (Substring, Substring).self).matchingSemantics(.unicodeScalar))
      } catch {
        throw field.error(
          "must be a regular expression with exactly one capture group, the part kept (\(error)); "
            + "write other groups (?:…)")
      }
    }
    if let field = optional("segment") {
      guard try field.string().hasSameBytes(as: "last") else { throw field.error("must be \"last\"") }
      capture.lastSegment = true
    }
    guard capture.pattern != nil || capture.lastSegment else {
      throw error("takes \"pattern\" or \"segment\" (or both); for the whole value write the pointer alone")
    }
    return capture
  }

  static func isPlaceholderName(_ name: String) -> Bool {
    guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
    return name.unicodeScalars.allSatisfy {
      $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
    }
  }

  /// `"by"` of a batch: "subset" (default; `id` required) or "position" (no `id`).
  func batchReading() throws(RESTConfigurationError) -> RESTConfiguration.BatchReading {
    var by = RESTConfiguration.BatchReading.subset
    if let field = optional("by") {
      guard let value = RESTConfiguration.BatchReading(rawValue: try field.string()) else {
        throw field.error("must be \"subset\" or \"position\"")
      }
      by = value
    }
    if by == .position, let id = optional("id") {
      throw id.error("a batch read by position has no ids in its answer: remove \"id\"")
    }
    return by
  }

  /// `"join": ","`: goes between the percent-encoded ids unencoded, so it must be text
  /// a query keeps as it is and that cannot end the value (`&`, `=`, `#`) or read as a
  /// space (`+`) or an escape (`%`).
  func joinSeparator() throws(RESTConfigurationError) -> String {
    let text = try string()
    let allowed = Set(",;|:!*'()$@/~-._".unicodeScalars)
    guard !text.isEmpty, text.unicodeScalars.count <= 8, text.unicodeScalars.allSatisfy(allowed.contains) else {
      throw error("must be 1 to 8 of the characters , ; | : ! * ' ( ) $ @ / ~ - . _")
    }
    return text
  }
}

extension RESTConfiguration {
  /// A value kept from an answer for the entity's unfollow.
  public struct Capture: @unchecked Sendable {
    public var name: String
    public var pointer: JSONPointer
    /// Keeps only the text of the pattern's one group (the first match in the value).
    public var pattern: CapturePattern? = nil
    /// Keeps only what follows the last `/` (after `pattern`, when both are given).
    public var lastSegment = false

    public init(name: String, pointer: JSONPointer) {
      self.name = name
      self.pointer = pointer
    }

    /// The part of `value` kept, or why there is none: never an empty value that
    /// would make the unfollow name nothing.
    public func part(of value: String) -> Result<String, CaptureMiss> {
      var part = Substring(value)
      if let pattern {
        guard let match = part.firstMatch(of: pattern.regex) else {
          return .failure(CaptureMiss("\(pointer) (\(Self.quoted(value))) does not match \(pattern.text)"))
        }
        part = match.output.1
      }
      if lastSegment { part = part.split(separator: "/", omittingEmptySubsequences: false).last ?? part }
      guard !part.isEmpty else {
        return .failure(CaptureMiss("\(pointer) (\(Self.quoted(value))) leaves nothing to keep for {\(name)}"))
      }
      return .success(String(part))
    }

    static func quoted(_ value: String) -> String {
      value.utf8.count > 200 ? "\"\(value.prefix(200))…\"" : "\"\(value)\""
    }
  }

  public struct CapturePattern: @unchecked Sendable {
    public var text: String
    public var regex: Regex<(Substring, Substring)>
  }

  public struct CaptureMiss: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
  }
}

extension Template {
  /// Every placeholder name an endpoint's path, query, form or JSON body uses.
  static func placeholders(of endpoint: RESTConfiguration.Endpoint) -> Set<String> {
    var names = Set(placeholders(in: endpoint.path))
    for (_, value) in endpoint.query { names.formUnion(placeholders(in: value)) }
    switch endpoint.body {
    case .form(let fields): for (_, value) in fields { names.formUnion(placeholders(in: value)) }
    case .json(let template): names.formUnion(placeholders(inJSON: template))
    case .graphql(let body): names.formUnion(placeholders(inJSON: body.variables))
    case nil: break
    }
    return names
  }

  private static func placeholders(inJSON json: JSON) -> Set<String> {
    switch json.kind {
    case .string: return Set(placeholders(in: json.string ?? ""))
    case .object: return json.members.reduce(into: []) { $0.formUnion(placeholders(inJSON: $1.value)) }
    case .array: return json.elements.reduce(into: []) { $0.formUnion(placeholders(inJSON: $1)) }
    default: return []
    }
  }
}
