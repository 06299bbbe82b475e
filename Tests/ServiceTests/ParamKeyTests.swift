import JSON
import NetworkModels
import Testing

@testable import Service

/// The generated param keys (`scripts/gen-protocol`) are what packing their names gives.
@Suite struct ParamKeyTests {
  @Test func generatedKeysArePackedAsKeysPackThem() {
    #expect(ParamKey.all.count >= 19)
    for key in ParamKey.all {
      #expect(key.isPacked(as: JSONScanner.Key(key.name)), "\(key.name)")
    }
  }
}
