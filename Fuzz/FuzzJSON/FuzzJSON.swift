// Differential target: JSONScanner (the request fast path) against jansson, on the
// whole input as one JSON text. They must accept and reject the same texts, and for a
// top-level object the scanner's members (keys, kinds, ranges, decoded scalars) must be
// jansson's. An accepted text must also survive encode → parse unchanged. The
// dispatcher's envelope scan must agree with the general scan.

import FuzzSupport
import JSON
import TestSupport

private func sameBytes(_ a: String?, _ b: String?) -> Bool {
  switch (a, b) {
  case (nil, nil): return true
  case (let a?, let b?): return a.utf8.elementsEqual(b.utf8)
  default: return false
  }
}

private let whitespace: [UInt8] = [0x20, 0x09, 0x0A, 0x0D, 0x00]

/// Nil when the scanner's members are jansson's; otherwise what differs.
private func memberDisagreement(
  _ bytes: UnsafeRawBufferPointer, _ value: JSON, _ object: JSONScanner.ScannedObject
) -> String? {
  let text = bytes[object.range]
  guard text.first == UInt8(ascii: "{"), text.last == UInt8(ascii: "}") else {
    return "object range \(object.range) is not the object's text"
  }
  for member in object.members {
    let range = UnsafeRawBufferPointer(rebasing: bytes[member.range])
    guard (try? JSON.parse(range)) != nil, let first = range.first, let last = range.last,
      !whitespace.contains(first), !whitespace.contains(last)
    else { return "member \(member.key)'s range \(member.range) is no single value" }
  }
  let distinctKeys = Set(object.members.map { Array($0.key.utf8) })
  guard distinctKeys.count == value.count else {
    return "\(distinctKeys.count) distinct keys, jansson has \(value.count)"
  }
  for (key, expected) in value.members {
    guard let member = object.member(key) else { return "no member \(key)" }
    guard let parsed = try? JSON.parse(UnsafeRawBufferPointer(rebasing: bytes[member.range])), parsed == expected
    else { return "member \(key) differs from jansson's \(expected)" }
    guard member.kind.jsonKind == expected.kind else {
      return "member \(key) is a \(member.kind), jansson has \(expected.kind)"
    }
    guard member.integerValue == expected.integer else { return "member \(key): integer differs" }
    guard sameBytes(member.stringValue, expected.string) else { return "member \(key): string differs" }
    guard member.hasKey(key), expected.string.map(member.hasStringValue) ?? true else {
      return "member \(key): hasKey or hasStringValue disagrees"
    }
    guard member.boolValue == expected.bool else { return "member \(key): bool differs" }
    let empty = (expected.isObject || expected.isArray) && expected.count == 0
    guard member.isEmptyContainer == empty else { return "member \(key): isEmptyContainer differs" }
  }
  return nil
}

@main
struct FuzzJSON {
  static func main() {
    runFuzzer { bytes in
      let reference = try? JSON.parse(bytes)
      let scanned = Result { () throws(JSONError) in try JSONScanner.scanObjectMembers(bytes) }
      var problem: String?
      switch (reference, scanned) {
      case (nil, .failure): break
      case (nil, .success): problem = "the scanner accepts what jansson rejects"
      case (.some, .failure(let error)): problem = "jansson accepts what the scanner rejects (\(error))"
      case (let value?, .success(let object)):
        if !value.isObject {
          if object != nil { problem = "top level is \(value.kind), but the scanner returned members" }
        } else if let object {
          problem = memberDisagreement(bytes, value, object)
        } else {
          problem = "top level is an object, but the scanner returned nil"
        }
        if problem == nil {
          let encoded = value.encoded()
          guard let again = try? JSON.parse(encoded) else {
            fuzzFailure("an accepted value encodes to what does not parse: \(escaped(encoded))", input: bytes)
          }
          if !(again == value) { problem = "encode → parse changed the value: \(escaped(encoded))" }
        }
      }
      // The dispatcher's envelope scan gives the general scan's verdict and members.
      if problem == nil, let envelopeProblem = EnvelopeCheck.disagreement(bytes, workspace: workspace) {
        problem = "envelope scan: \(envelopeProblem)"
      }
      if let problem { fuzzFailure(problem, input: bytes) }
    }
  }
}

// libFuzzer runs inputs one at a time, on one thread.
nonisolated(unsafe) private let workspace = JSONScanner.Workspace()
