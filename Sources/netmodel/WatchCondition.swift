import JSON

/// `watch --until TEST`: when a printed state matches, the watch ends (exit 0). Each
/// TEST is `PATH=VALUE`; given several times, all must hold for one state.
///
/// PATH names a member of the line's `state` (of the line itself for a stats line),
/// dotted for nested ones (`error.code`, `attributes.name`), a number indexing an array
/// (`items.0.id`). VALUE is JSON when it parses as JSON (`true`, `3`, `null`,
/// `"true"`), else the text itself (`id=banksy`). Values are compared as JSON, text by
/// its bytes; a number as written (`1` is not `1.0`); a member that is absent matches
/// nothing, not even `null`.
struct WatchCondition {
  struct Test {
    let path: [String]
    /// The expected value's canonical text, compared by bytes.
    let expected: [UInt8]
  }

  let tests: [Test]

  init(_ texts: [String]) throws(ClientOptions.UsageError) {
    var tests: [Test] = []
    for text in texts {
      guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
        throw ClientOptions.UsageError(message: "watch: --until needs PATH=VALUE (e.g. following=true), not \(text)")
      }
      let path = text[..<equals].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
      guard !path.contains(where: \.isEmpty) else {
        throw ClientOptions.UsageError(message: "watch: --until \(text): a PATH has no empty member names")
      }
      let valueText = String(text[text.index(after: equals)...])
      let value = (try? JSON.parse(valueText)) ?? .string(valueText)
      tests.append(Test(path: path, expected: value.encoded(flags: JSON.canonicalFlags)))
    }
    self.tests = tests
  }

  var isEmpty: Bool { tests.isEmpty }

  /// Whether the printed line (`{"subscription","seq","state"}`, or a stats line)
  /// passes every test.
  func matches(_ line: JSON) -> Bool {
    guard !tests.isEmpty else { return false }
    let subject = line["state"] ?? line
    return tests.allSatisfy { test in
      guard let found = Self.value(at: test.path, in: subject) else { return false }
      return found.encoded(flags: JSON.canonicalFlags) == test.expected
    }
  }

  private static func value(at path: [String], in root: JSON) -> JSON? {
    var current = root
    for name in path {
      if current.isArray {
        guard let index = Int(name), index >= 0, let element = current[index] else { return nil }
        current = element
      } else {
        guard current.isObject, let member = current[name] else { return nil }
        current = member
      }
    }
    return current
  }
}
