import JSON
import JSONRPC
import NetworkModels

/// `getFollowState`: an entity's state, from the cache when fresh enough (docs/protocol.md "Reads").
enum GetFollowState: ServiceMethod {
  static let name = "getFollowState"
  static let errorCodes = ErrorCode.everyMethod + ErrorCode.entityFailures
  typealias Result = EntityState

  struct Params: MethodParams {
    static let fields: [ParamField] =
      EntityKey.fields + [.optional("refresh", .boolean), .optional("maxAgeMs", .integer)]
    let key: EntityKey
    let refresh: Bool
    /// nil: the configured default.
    let maxAgeMs: UInt64?

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      let key = try params.entityKey()
      let refresh = try params.bool(ParamKey.refresh) ?? false
      let maxAge = try params.integer(ParamKey.maxAgeMs)
      if let maxAge, maxAge < 0 { throw .invalidParams("maxAgeMs must be ≥ 0", path: "/maxAgeMs") }
      // Made whole at the end: assigned member by member, the finished value was
      // copied out and the original destroyed.
      self.init(key: key, refresh: refresh, maxAgeMs: maxAge.map(UInt64.init))
    }

    private init(key: EntityKey, refresh: Bool, maxAgeMs: UInt64?) {
      self.key = key
      self.refresh = refresh
      self.maxAgeMs = maxAgeMs
    }
  }

  /// The request's parts are read where they are (a copy of the params or the key
  /// retained and released their strings).
  static func handle(_ request: Request<GetFollowState>, by service: NetmodelService) throws(ResponseError) {
    // A fresh cached state is answered at once, without a completion to allocate.
    try admitted { () throws(AdmissionProblem) in
      try service.models.readState(
        request.params.key, refresh: request.params.refresh,
        maxAgeMs: request.params.maxAgeMs ?? service.configuration.defaultMaxAgeMs,
        acceptsStale: request.params.maxAgeMs == nil,
        cached: { state in request.reply.succeed(state) },
        later: {
          let reply = request.reply
          return { result in
            switch result {
            case .success(let state): reply.succeed(state)
            case .failure(let failure): reply.fail(failure.failure.responseError(state: failure.state))
            }
          }
        })
    }
  }
}
