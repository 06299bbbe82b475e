import JSON
import Posix
import Testing

@testable import netmodel

/// The one table of serve options (issue 27): the command line, netmodel.json, `--help`
/// and schema/serve-config.schema.json all say the same options.
@Suite struct ServeOptionTableTests {
  static let schemaPath: String = {
    var path = #filePath
    for _ in 0..<3 { path = FileSystem.parentFolder(of: path) }
    return path + "/schema/serve-config.schema.json"
  }()

  @Test func theSchemaHasEveryOptionTheFileTakesAndNoOther() throws {
    let schema = try JSON.parse(try FileSystem.readFile(Self.schemaPath))
    let properties = try #require(schema["properties"])
    let documented = properties.members.map(\.key).filter { $0 != "$schema" && $0 != "description" }.sorted()
    #expect(documented == ServeOption.inFile.map(\.name).sorted())
    #expect(schema["additionalProperties"]?.bool == false)
    for option in ServeOption.inFile {
      let type = properties[option.name]?["type"]?.string
      switch option.value {
      case .count: #expect(type == "integer", "\(option.name)")
      case .text, .path: #expect(type == "string", "\(option.name)")
      case .none, .optionalInline: #expect(type == "boolean", "\(option.name)")
      }
    }
  }

  @Test func helpShowsEveryOption() {
    for option in ServeOption.table {
      #expect(ServeOption.usage.contains("    " + option.synopsis), "\(option.name)")
    }
  }

  @Test func theCommandLineTakesTheTableAndAppliesItsValues() throws {
    let options = try ServeOptions(arguments: ["--max-entities", "50", "--backend=rest", "--config", "c.json"])
    #expect(options.entityEviction.maxCount == 50 && options.backend == .rest && options.configPath == "c.json")
    #expect(options.given.map(\.option.name) == ["max-entities", "backend", "config"])
    #expect(throws: ServeOptions.UsageError.self) { try ServeOptions(arguments: ["--no-stdio=yes", "--socket"]) }
    #expect(throws: ServeOptions.UsageError.self) { try ServeOptions(arguments: ["--max-lists"]) }
    #expect(throws: ServeOptions.UsageError.self) { try ServeOptions(arguments: ["--bogus"]) }
    // By bytes: a combining mark makes another name, not --backend.
    #expect(throws: ServeOptions.UsageError.self) { try ServeOptions(arguments: ["--backend\u{301}", "rest"]) }
  }
}
