import JSON
import JSONRPC
import Service
import Testing

/// The method registry against schema/openrpc.json: every method, every param with its
/// types and whether it is required, every error code; and each param decoded as
/// declared. The schema cannot drift from the code, nor the code from its declarations.
@Suite struct MethodContractTests {
  let schema: JSON
  let methods: [String: JSON]

  init() throws {
    schema = try JSON.parse(try readFile(repositoryRoot + "/schema/openrpc.json"))
    var methods: [String: JSON] = [:]
    for method in schema["methods"]!.elements { methods[method["name"]!.string!] = method }
    self.methods = methods
  }

  /// `value` with `$ref`s into the document's components followed.
  func resolved(_ value: JSON) -> JSON {
    guard let reference = value["$ref"]?.string else { return value }
    let path = reference.dropFirst(2).split(separator: "/").map(String.init)
    return resolved(path.reduce(schema) { $0[$1]! })
  }

  /// The JSON Schema type names a param's schema allows, sorted.
  func typeNames(_ schemaValue: JSON) -> [String] {
    let value = resolved(schemaValue)
    if let name = value["type"]?.string { return [name] }
    if let names = value["type"], names.isArray { return names.elements.map { $0.string! }.sorted() }
    // An enum of strings names no type.
    let kinds = Set(value["enum"]!.elements.map { $0.kind })
    #expect(kinds == [.string], "an enum of other than strings: \(value)")
    return ["string"]
  }

  @Test func theRegistryIsTheSchemasMethods() throws {
    let fixture = try ServiceFixture()
    let descriptions = fixture.service.server.dispatcher.descriptions
    #expect(Set(descriptions.keys) == Set(methods.keys))
    for (name, method) in methods {
      guard let description = descriptions[name] else { continue }
      #expect(description.isNotification == (method["result"] == nil), "\(name)")
      let params = method["params"]?.elements ?? []
      #expect(description.fields.map(\.name).sorted() == params.map { $0["name"]!.string! }.sorted(), "\(name)")
      for param in params {
        let paramName = param["name"]!.string!
        guard let field = description.fields.first(where: { $0.name == paramName }) else { continue }
        #expect(field.isRequired == (param["required"]?.bool ?? false), "\(name).\(paramName)")
        #expect(field.types.schemaNames == typeNames(param["schema"]!), "\(name).\(paramName)")
      }
      let codes = (method["errors"]?.elements ?? []).map { resolved($0)["code"]!.integer! }
      #expect(description.errorCodes.map(\.rawValue).sorted() == codes.sorted(), "\(name)")
    }
  }

  /// A value of none of `types`.
  func wrongValue(for types: JSONTypes) -> String {
    let candidates: [(JSONTypes, String)] = [
      (.string, #""x""#), (.integer, "1"), (.boolean, "true"), (.object, #"{"a":1}"#), (.array, "[1]"),
    ]
    return candidates.first { !types.contains($0.0) }!.1
  }

  @Test func everyParamIsDecodedAsDeclared() throws {
    let fixture = try ServiceFixture()
    var id = 0
    for (name, description) in fixture.service.server.dispatcher.descriptions where !description.isNotification {
      let example = methods[name]!["examples"]!.elements[0]["params"]!.elements
      // What the example gives for the required params: a call valid as far as params go.
      var valid: [(String, String)] = []
      for param in example {
        let paramName = param["name"]!.string!
        if description.fields.contains(where: { $0.name == paramName && $0.isRequired }) {
          valid.append((paramName, String(decoding: param["value"]!.encoded(), as: UTF8.self)))
        }
      }
      for field in description.fields {
        var calls = [(valid.filter { $0.0 != field.name } + [(field.name, wrongValue(for: field.types))], "wrong type")]
        if field.isRequired { calls.append((valid.filter { $0.0 != field.name }, "missing")) }
        for (members, fault) in calls {
          id += 1
          let params = "{" + members.map { #""\#($0.0)":\#($0.1)"# }.joined(separator: ",") + "}"
          let reply = try fixture.call(name, params, id: id)
          #expect(reply["error"]?["code"]?.integer == -32602, "\(name) \(params): \(fault)")
          #expect(reply["error"]?["data"]?["path"]?.string == "/" + field.name, "\(name) \(params): \(fault)")
        }
      }
    }
  }
}
