import JSON
import NetworkModels
import Testing

@testable import Service

/// The params names packed by hand are what packing their names gives.
@Suite struct ParamKeyTests {
  @Test func handPackedNamesArePackedAsKeysPackThem() {
    let keys = [
      EntityKey.kindName, EntityKey.idName, GetFollowState.Params.refreshName, GetFollowState.Params.maxAgeMsName,
    ]
    for key in keys {
      #expect(key.isPacked(as: JSONScanner.Key(key.name)), "\(key.name)")
    }
  }
}
