import JSON
import JSONRPC
import NetworkModels

/// `configure`: the backend's environment and credentials (docs/backends.md "Backends").
enum Configure: ServiceMethod {
  static let name = "configure"
  static let errorCodes = ErrorCode.everyMethod

  struct Params: MethodParams {
    static let fields: [ParamField] = [
      .optional("environment", .string), .optional("authToken", [.string, .null]), .optional("values", .object),
    ]

    enum TokenChange {
      case keep
      /// `null` clears the token; a string sets it.
      case set(String?)
    }

    let environment: String?
    let authToken: TokenChange
    /// Named values to set (nil: forget), in the order given.
    let values: [(name: String, value: String?)]

    init(from params: borrowing ParamsReader) throws(ResponseError) {
      environment = try params.string("environment")
      if let environment, environment.isEmpty {
        throw .invalidParams("environment must not be empty", path: "/environment")
      }
      authToken = params.contains("authToken") ? .set(try params.string("authToken")) : .keep
      // Never echoed: the message names the problem, not the token.
      if case .set(let token?) = authToken, let problem = AuthToken.problem(token) {
        throw .invalidParams("authToken \(problem)", path: "/authToken")
      }
      var values: [(String, String?)] = []
      for (name, value) in try params.object("values")?.members ?? [] {
        guard value.kind == .string || value.kind == .null else {
          throw .invalidParams("values.\(name) must be a string or null", path: JSONPointer.member(name, of: "/values"))
        }
        values.append((name, value.string))
      }
      self.values = values
    }
  }

  /// The environment active now. Written through jansson: an environment's name is
  /// the configuration's, and its escapes are jansson's.
  struct Result: EncodableResult {
    let environment: String

    func encode(into buffer: inout [UInt8]) {
      JSON.object().set("environment", .string(environment)).encode(into: &buffer)
    }
  }

  static func handle(_ request: Request<Configure>, by service: NetmodelService) throws(ResponseError) {
    let params = request.params
    let backend = service.models.environments
    let previousEnvironment = service.configuration.environment
    let environment = params.environment
    var changed = Changes()
    // Names by their bytes, as everything from a peer (`ExactString`): a spelling that is
    // only canonically equal to a configured name is not that name.
    if let environment, let backend, !backend.environmentNames.contains(where: { $0.hasSameBytes(as: environment) }) {
      throw .invalidParams(
        "no environment \(environment) (configured: \(backend.environmentNames.joined(separator: ", ")))",
        path: "/environment")
    }
    if !params.values.isEmpty {
      guard let backend else { throw .invalidParams("this backend has no values", path: "/values") }
      // All or nothing: a refused value leaves every value as it was.
      for (name, value) in params.values {
        if let value, let problem = backend.setValueProblem(name, value) {
          throw .invalidParams("values.\(name) \(problem)", path: JSONPointer.member(name, of: "/values"))
        }
        if value == nil, !backend.valueNames.contains(where: { $0.hasSameBytes(as: name) }) {
          throw .invalidParams(
            "no value \(name) (configured: \(backend.valueNames.joined(separator: ", ")))",
            path: JSONPointer.member(name, of: "/values"))
        }
      }
      changed.values = service.models.setValues(params.values)
    }
    if case .set(let token) = params.authToken {
      service.configuration.authToken = token
      changed.authToken = service.models.setAuthToken(
        token, resend: environment.map { $0.hasSameBytes(as: previousEnvironment) } ?? true)
    }
    if let environment, !environment.hasSameBytes(as: previousEnvironment) {
      service.configuration.environment = environment
      service.models.switchEnvironment(from: previousEnvironment, to: environment)
      changed.environment = true
    }
    request.reply.succeed(Result(environment: service.configuration.environment))
    if changed.any { tellEveryConnection(changed, environment: service.configuration.environment, by: service) }
  }

  /// What one `configure` changed, for `configurationChanged`.
  struct Changes {
    var environment = false
    var authToken = false
    var values: [String] = []
    var any: Bool { environment || authToken || !values.isEmpty }
  }

  private static let notification = MessageEncoder.Notification(method: "configurationChanged")

  /// The environment, token and values are the daemon's, not a connection's: every
  /// connection that has spoken (the one that asked too) hears that its world changed, ahead of the
  /// replies of this turn as `stateChanged` is. The token itself is never sent.
  private static func tellEveryConnection(_ changed: Changes, environment: String, by service: NetmodelService) {
    let what = JSON.array()
    if changed.environment { _ = what.append(.string("environment")) }
    if changed.authToken { _ = what.append(.string("authToken")) }
    if !changed.values.isEmpty { _ = what.append(.string("values")) }
    let values = JSON.array()
    for name in changed.values { _ = values.append(.string(name)) }
    let params = JSON.object().set("environment", .string(environment)).set("changed", what).set("values", values)
      .encoded()
    // A connection that has not spoken yet is not told: its framing is not known, and
    // a Content-Length header sent to an NDJSON peer would be a line that is not JSON.
    // What it asks first is answered in the new world anyway.
    for connection in service.server.connections.values.sorted(by: { $0.id < $1.id }) where connection.framing != nil {
      connection.sendNotification { buffer in
        notification.encode(into: &buffer) { $0.append(contentsOf: params) }
      }
    }
  }
}
