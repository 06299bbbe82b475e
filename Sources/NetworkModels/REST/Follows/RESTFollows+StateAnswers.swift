import HTTP
import JSON

/// How state answers are read: the follow state, the followed subset of a batch.
extension RESTFollows {
  static func following(in response: HTTPResponse, _ rule: RESTConfiguration.FollowingRule) -> Result<
    Bool, FollowFailure
  > {
    if rule == .success { return .success(true) }
    return followingFromScan(response.body, rule) ?? followingFromTree(response.body, rule)
  }

  /// What `following(in:_:)` reads from any answer, through a jansson tree.
  static func followingFromTree(_ body: [UInt8], _ rule: RESTConfiguration.FollowingRule) -> Result<
    Bool, FollowFailure
  > {
    guard let json = try? JSON.parse(body) else {
      return .failure(FollowFailure(.unavailable, "the state answer is not JSON"))
    }
    switch rule {
    case .success:
      return .success(true)
    case .nonEmpty(let pointer):
      guard let value = json.value(at: pointer) else { return .success(false) }
      switch value.kind {
      case .array, .object: return .success(value.count > 0)
      case .null: return .success(false)
      default: return .success(true)
      }
    case .pointer(let pointer):
      guard let flag = json.value(at: pointer)?.bool else {
        return .failure(FollowFailure(.unavailable, "the state answer has no true or false at \(pointer)"))
      }
      return .success(flag)
    case .matches(let pointer, let match):
      return .success(RESTConfiguration.ValueTest(pointer: pointer, match: match).holds(in: json))
    }
  }

  /// The common answer, an object whose member the rule names (`/following`), read by
  /// the scanner without building a tree; nil for any other shape (a deeper pointer,
  /// an answer that is not an object), which `following(in:_:)` reads with jansson.
  static func followingFromScan(_ body: [UInt8], _ rule: RESTConfiguration.FollowingRule) -> Result<
    Bool, FollowFailure
  >? {
    let pointer: JSONPointer
    switch rule {
    case .success, .matches: return nil
    case .nonEmpty(let named), .pointer(let named): pointer = named
    }
    guard pointer.tokens.count == 1 else { return nil }
    let scanned = body.withUnsafeBytes { bytes in
      Result { () throws(JSONError) in try JSONScanner.scanObjectMembers(bytes) }
    }
    guard case .success(let object) = scanned else {
      return .failure(FollowFailure(.unavailable, "the state answer is not JSON"))
    }
    guard let object else { return nil }
    let member = object.member(pointer.tokens[0])
    switch rule {
    case .success, .matches:
      return .success(true)
    case .nonEmpty:
      guard let member else { return .success(false) }
      switch member.kind {
      case .array, .object: return .success(!member.isEmptyContainer)
      case .null: return .success(false)
      default: return .success(true)
      }
    case .pointer(let pointer):
      guard let flag = member?.boolValue else {
        return .failure(FollowFailure(.unavailable, "the state answer has no true or false at \(pointer)"))
      }
      return .success(flag)
    }
  }

  static func followedIDs(in response: HTTPResponse, _ batch: RESTConfiguration.Batch) -> Result<
    Set<ExactString>, FollowFailure
  > {
    guard let json = try? JSON.parse(response.body), let items = json.value(at: batch.items), items.isArray else {
      return .failure(FollowFailure(.unavailable, "the batched state answer has no array at \(batch.items)"))
    }
    var ids = Set<ExactString>()
    for item in items.elements {
      guard let value = item.value(at: batch.id) else { continue }
      if let string = value.string {
        ids.insert(ExactString(string))
      } else if let number = value.integer {
        ids.insert(ExactString(String(number)))
      }
    }
    return .success(ids)
  }
}
