import JSON
import JSONRPC
import NetworkModels

/// `configure`: the backend's environment and credentials (README "Backends").
enum Configure: ServiceMethod {
  static let name = "configure"
  static let errorCodes = ErrorCode.everyMethod
  typealias Result = JSON

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
      var values: [(String, String?)] = []
      for (name, value) in try params.object("values")?.members ?? [] {
        guard value.kind == .string || value.kind == .null else {
          throw .invalidParams("values.\(name) must be a string or null", path: "/values/" + Configure.escaped(name))
        }
        values.append((name, value.string))
      }
      self.values = values
    }
  }

  static func handle(_ request: Request<Configure>, by service: NetmodelService) throws(ResponseError) {
    let params = request.params
    let backend = service.models.environments
    let previousEnvironment = service.configuration.environment
    let environment = params.environment
    if let environment, let backend, !backend.environmentNames.contains(environment) {
      throw .invalidParams(
        "no environment \(environment) (configured: \(backend.environmentNames.joined(separator: ", ")))",
        path: "/environment")
    }
    if !params.values.isEmpty {
      guard let backend else { throw .invalidParams("this backend has no values", path: "/values") }
      // All or nothing: a refused value leaves every value as it was.
      for (name, value) in params.values {
        if let value, let problem = backend.setValueProblem(name, value) {
          throw .invalidParams("values.\(name) \(problem)", path: "/values/" + escaped(name))
        }
        if value == nil, !backend.valueNames.contains(name) {
          throw .invalidParams(
            "no value \(name) (configured: \(backend.valueNames.joined(separator: ", ")))",
            path: "/values/" + escaped(name))
        }
      }
      for (name, value) in params.values { _ = backend.setValue(name, value) }
    }
    if case .set(let token) = params.authToken {
      service.configuration.authToken = token
      service.models.setAuthToken(token, resend: environment == nil || environment == previousEnvironment)
    }
    if let environment, environment != previousEnvironment {
      service.configuration.environment = environment
      service.models.switchEnvironment(from: previousEnvironment, to: environment)
    }
    request.reply.succeed(JSON.object().set("environment", .string(service.configuration.environment)))
  }

  /// A JSON Pointer token for `name`.
  static func escaped(_ name: String) -> String {
    name.split(separator: "~", omittingEmptySubsequences: false).joined(separator: "~0")
      .split(separator: "/", omittingEmptySubsequences: false).joined(separator: "~1")
  }
}
