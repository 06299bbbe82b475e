import JSON
import JSONRPC
import NetworkModels

extension ResponseError {
  /// The one mapping of the models' refusals to JSON-RPC errors. `prefix` is where the
  /// refused object sits in the request's params (`""`, `/topics/2`, `/items/0`).
  init(_ problem: AdmissionProblem, under prefix: String = "") {
    switch problem {
    case .invalid(let path, let reason):
      self = .invalidParams(reason, path: prefix + path)
    case .unknownKind(let kind, let reason):
      self.init(
        .unknownKindOrList, reason,
        data: JSON.object().set("kind", .string(kind)).set("path", .string(prefix + "/kind"))
          .set("retryable", .bool(false)))
    case .unknownList(let name):
      self.init(
        .unknownKindOrList, "unknown list \(name)",
        data: JSON.object().set("list", .string(name)).set("retryable", .bool(false)))
    }
  }
}

/// Runs `body`, its refusal as the request's error.
@inline(__always)
func admitted<T>(under prefix: String = "", _ body: () throws(AdmissionProblem) -> T) throws(ResponseError) -> T {
  do {
    return try body()
  } catch {
    throw ResponseError(error, under: prefix)
  }
}

/// Runs `body`, the refusal of one of the request's entities or topics as the
/// request's error: `prefix` is the array they sit in (`/items`, `/topics`).
@inline(__always)
func admitted<T>(each prefix: String, _ body: () throws(IndexedAdmissionProblem) -> T) throws(ResponseError) -> T {
  do {
    return try body()
  } catch {
    throw ResponseError(error.problem, under: "\(prefix)/\(error.index)")
  }
}
