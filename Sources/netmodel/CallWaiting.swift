import JSON
import Posix

/// What `netmodel call` says on stderr while its answer is late: once it has waited a
/// second, it asks the server (`inspect`, on a second connection: the first is busy
/// waiting) what the call waits for, and prints one line, again only when the reason
/// changes. A script reading stdout sees nothing of it.
struct CallWaiting {
  /// After this long without an answer the reason is asked, and again each time as long.
  static let interval = Duration.seconds(1)

  let socketPath: String
  /// The entity the call is about (`kind`, `id` of its params), when it names one.
  let entity: (kind: String, id: String)?
  /// What the line said last, by what it names (not its times, which move).
  private var said: String?
  private var inspector: RPCClient?
  private var inspectorFailed = false

  init(socketPath: String, params: JSON?) {
    self.socketPath = socketPath
    if let kind = params?["kind"]?.string, let id = params?["id"]?.string {
      entity = (kind, id)
    } else {
      entity = nil
    }
  }

  /// Asks the server why the call waits and prints the reason when it is new.
  mutating func check() {
    let reason = self.reason()
    guard said.map({ !$0.hasSameBytes(as: reason.key) }) ?? true else { return }
    said = reason.key
    try? FileDescriptor.standardError.writeAll("waiting: \(EscapedText.line(reason.text))\n")
  }

  private mutating func reason() -> (key: String, text: String) {
    guard let inspection = inspect() else { return ("", "the server's answer") }
    return Self.reason(inspection, entity: entity, nowSeconds: Process.wallClockSeconds())
  }

  /// One `inspect` on the second connection, at most a second: a server too busy to
  /// answer it is waited for in silence rather than held up further.
  private mutating func inspect() -> JSON? {
    guard !inspectorFailed else { return nil }
    do {
      if inspector == nil { inspector = try RPCClient(socketPath: socketPath) }
      let params = JSON.object().set("limit", .integer(5))
      let sections = JSON.array().append(.string("holds"))
      if let entity {
        sections.append(.string("entities"))
        params.set("kind", .string(entity.kind)).set("id", .string(entity.id))
      }
      params.set("sections", sections)
      inspector!.deadline = ContinuousClock.now + .seconds(1)
      let id = try inspector!.send(method: "inspect", params: params)
      let reply = try inspector!.reply(to: id)
      // An older server has no `inspect`: nothing to ask it again.
      guard let result = reply["result"] else {
        inspectorFailed = true
        return nil
      }
      return result
    } catch {
      inspectorFailed = true
      return nil
    }
  }

  /// The line for an `inspect` result: a rate limit first (it holds every call), then
  /// the entity's own work, then calls queued for a connection.
  /// `key` names what is waited for without the times that move (`for 3 s`, and an
  /// end time read against this machine's clock): the line changes when it does.
  static func reason(_ inspection: JSON, entity: (kind: String, id: String)?, nowSeconds: Double) -> (
    key: String, text: String
  ) {
    let holds = inspection["holds"]
    if let limit = holds?["rateLimit"], !limit.isNull {
      let left = Double(limit["untilMs"]?.integer ?? 0) / 1000
      // To the nearest second: a reset is usually a whole second, and the milliseconds
      // gained or lost on the way (the wait in whole ms, two clocks) must not move it.
      let until = Process.localTimeOfDay(secondsSince1970: Int((nowSeconds + left).rounded()))
      let api = holds?["api"]?.string ?? "the API"
      let header = limit["reason"]?["header"]?.string
      let status = limit["reason"]?["status"]?.integer
      let source = header ?? status.map { "status \($0)" } ?? "its answer"
      return ("rate \(api) \(limit["reason"]?.text ?? "")", "\(api) rate-limited until \(until) (\(source))")
    }
    let waiting = holds?["waiting"]?["total"]?.integer ?? 0
    let queued = waiting > 0 ? "; \(waiting) HTTP call(s) queued" : ""
    if let entity, let found = inspection["entities"]?["list"]?.elements.first {
      let states = (found["states"]?.elements ?? []).compactMap(\.string)
      let name = "\(entity.kind)/\(entity.id)"
      let since = found["sinceMs"]?.integer.map { ", for \($0 / 1000) s" } ?? ""
      let key = "entity \(states.joined(separator: ",")) \(found["error"]?.text ?? "") \(waiting)"
      if let error = found["error"], !error.isNull, let message = error["message"]?.string {
        return (key, "\(name): \(states.joined(separator: ", "))\(since): \(message)\(queued)")
      }
      return (key, "\(name): \(states.joined(separator: ", "))\(since)\(queued)")
    }
    if waiting > 0 { return ("queued \(waiting)", "\(waiting) HTTP call(s) queued for a connection") }
    return ("", "the server's answer")
  }

  func close() { inspector?.close() }
}
