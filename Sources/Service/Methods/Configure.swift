import JSON
import JSONRPC
import NetworkModels

/// `configure`: the backend's environment and credentials (README "Backends").
enum Configure: ServiceMethod {
  static let name = "configure"
  static let errorCodes = ErrorCode.everyMethod
  typealias Result = JSON

  struct Params: MethodParams {
    static let fields: [ParamField] = [.optional("environment", .string), .optional("authToken", [.string, .null])]

    enum TokenChange {
      case keep
      /// `null` clears the token; a string sets it.
      case set(String?)
    }

    let environment: String?
    let authToken: TokenChange

    init(from params: ParamsReader) throws(ResponseError) {
      environment = try params.string("environment")
      if let environment, environment.isEmpty {
        throw .invalidParams("environment must not be empty", path: "/environment")
      }
      authToken = params.contains("authToken") ? .set(try params.string("authToken")) : .keep
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
}
