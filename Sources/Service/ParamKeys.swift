// generated from schema/openrpc.json by scripts/gen-protocol; do not edit
import JSON

/// Every by-name param of the schema's methods, packed at compile time: a `static let`
/// made of literals is laid down in the binary, while one that code makes (`Key("kind")`)
/// is checked for initialisation at each use. `ParamKeyTests` checks each against
/// `JSONScanner.Key(name)`; `scripts/gen-protocol --check` checks the file against the schema.
enum ParamKey {
  typealias Key = JSONScanner.Key

  static let authToken = Key(name: "authToken", low: 0x656B_6F54_6874_7561, high: 0x006E, count: 9)
  static let `await` = Key(name: "await", low: 0x0074_6961_7761, count: 5)
  static let capabilities = Key(name: "capabilities", low: 0x696C_6962_6170_6163, high: 0x7365_6974, count: 12)
  static let clientInfo = Key(name: "clientInfo", low: 0x6E49_746E_6569_6C63, high: 0x6F66, count: 10)
  static let daemon = Key(name: "daemon", low: 0x6E6F_6D65_6164, count: 6)
  static let environment = Key(name: "environment", low: 0x6D6E_6F72_6976_6E65, high: 0x0074_6E65, count: 11)
  static let following = Key(name: "following", low: 0x6E69_776F_6C6C_6F66, high: 0x0067, count: 9)
  static let id = Key(name: "id", low: 0x6469, count: 2)
  static let items = Key(name: "items", low: 0x0073_6D65_7469, count: 5)
  static let kind = Key(name: "kind", low: 0x646E_696B, count: 4)
  static let limit = Key(name: "limit", low: 0x0074_696D_696C, count: 5)
  static let list = Key(name: "list", low: 0x7473_696C, count: 4)
  static let maxAgeMs = Key(name: "maxAgeMs", low: 0x734D_6567_4178_616D, count: 8)
  static let page = Key(name: "page", low: 0x6567_6170, count: 4)
  static let params = Key(name: "params", low: 0x736D_6172_6170, count: 6)
  static let processId = Key(name: "processId", low: 0x4973_7365_636F_7270, high: 0x0064, count: 9)
  static let refresh = Key(name: "refresh", low: 0x0068_7365_7266_6572, count: 7)
  static let sections = Key(name: "sections", low: 0x736E_6F69_7463_6573, count: 8)
  static let since = Key(name: "since", low: 0x0065_636E_6973, count: 5)
  static let state = Key(name: "state", low: 0x0065_7461_7473, count: 5)
  static let subscription = Key(name: "subscription", low: 0x7069_7263_7362_7573, high: 0x6E6F_6974, count: 12)
  static let timeoutMs = Key(name: "timeoutMs", low: 0x4D74_756F_656D_6974, high: 0x0073, count: 9)
  static let topics = Key(name: "topics", low: 0x7363_6970_6F74, count: 6)
  static let values = Key(name: "values", low: 0x7365_756C_6176, count: 6)

  /// For the tests.
  static let all = [
    authToken,
    `await`,
    capabilities,
    clientInfo,
    daemon,
    environment,
    following,
    id,
    items,
    kind,
    limit,
    list,
    maxAgeMs,
    page,
    params,
    processId,
    refresh,
    sections,
    since,
    state,
    subscription,
    timeoutMs,
    topics,
    values,
  ]
}
