import JSON
import JSONRPC
import NetworkModels

extension NetmodelService {
  /// `{list, params?}` as a list's identity and its template values.
  static func listKey(
    _ params: borrowing ParamsReader, path: String
  ) throws(ResponseError) -> (ListKey, [String: String]) {
    guard let name = try params.string("list"), !name.isEmpty else {
      throw .invalidParams("list is required", path: path + "/list")
    }
    let canonical = JSON.object()
    var values: [String: String] = [:]
    if let object = try params.object("params") {
      for (member, value) in object.members {
        let memberPath = JSONPointer.member(member, of: path + "/params")
        // A repeated name comes once from the scan, so a name already here is another
        // spelling of one (`caf\u{E9}`, `cafe\u{301}`): `String` keys merge the two, the
        // API would not.
        if value.kind != .null, values[member] != nil {
          throw .invalidParams(
            "params.\(member) is another spelling (Unicode form) of a param given already", path: memberPath)
        }
        switch value.kind {
        case .string: values[member] = value.string
        case .integer: values[member] = String(value.integer ?? 0)
        case .real: values[member] = String(value.real ?? 0)
        case .bool: values[member] = (value.bool ?? false) ? "true" : "false"
        case .null: continue
        case .object, .array:
          throw .invalidParams("list params are strings, numbers or booleans", path: memberPath)
        }
        canonical.set(member, value)
      }
    }
    let text = String(decoding: canonical.encoded(flags: JSON.canonicalFlags), as: UTF8.self)
    return (ListKey(name: name, paramsText: text), values)
  }
}

/// A ListState as schema/openrpc.json gives it, written as text.
extension ListState: EncodableResult {
  public func encode(into buffer: inout [UInt8]) {
    buffer.append(contentsOf: ListStateText.list)
    appendJSONString(key.name, to: &buffer)
    buffer.append(contentsOf: ListStateText.params)
    buffer.append(contentsOf: key.paramsText.utf8)
    buffer.append(contentsOf: ListStateText.state)
    appendJSONString(phase.rawValue, to: &buffer)
    buffer.append(contentsOf: ListStateText.items)
    for (index, item) in items.enumerated() {
      if index > 0 { buffer.append(UInt8(ascii: ",")) }
      buffer.append(contentsOf: ListStateText.kind)
      appendJSONString(item.key.kind, to: &buffer)
      buffer.append(contentsOf: ListStateText.id)
      appendJSONString(item.key.id, to: &buffer)
      buffer.append(contentsOf: ListStateText.following)
      JSONLiteral.append(item.following, to: &buffer)
      buffer.append(contentsOf: ListStateText.attributes)
      JSONLiteral.append(raw: item.attributes, to: &buffer)
      buffer.append(UInt8(ascii: "}"))
    }
    buffer.append(contentsOf: ListStateText.sections)
    for (index, section) in sections.enumerated() {
      if index > 0 { buffer.append(UInt8(ascii: ",")) }
      buffer.append(contentsOf: ListStateText.title)
      appendJSONString(section.title, to: &buffer)
      buffer.append(contentsOf: ListStateText.start)
      appendDecimal(Int64(section.start), to: &buffer)
      buffer.append(contentsOf: ListStateText.count)
      appendDecimal(Int64(section.count), to: &buffer)
      buffer.append(UInt8(ascii: "}"))
    }
    buffer.append(contentsOf: ListStateText.hasMore)
    JSONLiteral.append(hasMore, to: &buffer)
    buffer.append(contentsOf: ListStateText.error)
    if let error = error {
      error.encodeErrorObject(into: &buffer)
    } else {
      appendLiteral("null", to: &buffer)
    }
    buffer.append(contentsOf: ListStateText.version)
    appendDecimal(Int64(version), to: &buffer)
    buffer.append(UInt8(ascii: "}"))
  }
}

private enum ListStateText {
  static let list = Array(#"{"list":"#.utf8)
  static let params = Array(#","params":"#.utf8)
  static let state = Array(#","state":"#.utf8)
  static let items = Array(#","items":["#.utf8)
  static let kind = Array(#"{"kind":"#.utf8)
  static let id = Array(#","id":"#.utf8)
  static let following = Array(#","following":"#.utf8)
  static let attributes = Array(#","attributes":"#.utf8)
  static let sections = Array(#"],"sections":["#.utf8)
  static let title = Array(#"{"title":"#.utf8)
  static let start = Array(#","start":"#.utf8)
  static let count = Array(#","count":"#.utf8)
  static let hasMore = Array(#"],"hasMore":"#.utf8)
  static let error = Array(#","error":"#.utf8)
  static let version = Array(#","version":"#.utf8)
}
