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
    case .unknownList(let name, let known):
      // Bounded: a configuration may have many lists, and the error is not the place
      // for all of them (`more` says how many were left out).
      let shown = known.prefix(ResponseError.maxListNames)
      let names = JSON.array()
      for list in shown { names.append(.string(list)) }
      let data = JSON.object().set("list", .string(name)).set("lists", names)
      let more = known.count - shown.count
      if more > 0 { data.set("more", .integer(Int64(more))) }
      let there =
        shown.isEmpty
        ? "the backend has no lists"
        : "the lists are \(shown.joined(separator: ", "))\(more > 0 ? " and \(more) more" : "")"
      self.init(.unknownKindOrList, "unknown list \(name); \(there)", data: data.set("retryable", .bool(false)))
    }
  }

  /// The most list names an unknown list's error gives.
  static let maxListNames = 32
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
