import JSON
import JSONRPC
import Posix

extension NetmodelService {
  func registerStats() {
    server.dispatcher.register("stats") { [unowned self] request throws(ResponseError) in
      try Params.expectNone(request.params)
      request.responder.succeed(self.statsResult())
    }
  }

  /// The counters as the `Stats` schema in schema/openrpc.json describes them.
  func statsResult() -> JSON {
    let stats = server.statistics
    let uptimeMs = (Process.monotonicNanoseconds() - stats.startNanoseconds) / 1_000_000
    let byMethod = JSON.object()
    for (method, count) in stats.requestsByMethod.sorted(by: { $0.key < $1.key }) {
      byMethod.set(method, .integer(count))
    }
    let byCode = JSON.object()
    for (code, count) in stats.errorsByCode.sorted(by: { $0.key < $1.key }) {
      byCode.set(String(code), .integer(count))
    }
    return JSON.object()
      .set("uptimeMs", .integer(Int64(uptimeMs)))
      .set(
        "connections",
        JSON.object().set("open", .integer(stats.connectionsOpen)).set("total", .integer(stats.connectionsTotal))
      )
      .set("requests", JSON.object().set("total", .integer(stats.requestsTotal)).set("byMethod", byMethod))
      .set("notificationsReceived", .integer(stats.notificationsReceived))
      .set("bytes", JSON.object().set("in", .integer(stats.bytesIn)).set("out", .integer(stats.bytesOut)))
      .set("errors", JSON.object().set("total", .integer(stats.errorsTotal)).set("byCode", byCode))
  }
}
