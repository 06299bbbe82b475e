import NetworkModels

extension SimulationSettings {
  /// Parses the text of `serve --simulate`,
  /// `latency=MS,jitter=MS,failure=RATE,status=CODE,seed=N`: every key is
  /// optional, in any order, each at most once. Durations are whole milliseconds
  /// (an `ms` suffix is allowed); the rate is 0…1 or a percentage (`10%`); the status
  /// is an HTTP error status 400…599.
  static func parse(option spec: String) throws(ServeOptions.UsageError) -> SimulationSettings {
    func fail(_ message: String) -> ServeOptions.UsageError {
      ServeOptions.UsageError(message: "--simulate \(spec): \(message)")
    }
    let trimmed = spec.trimmingSpaces
    if trimmed.isEmpty {
      throw fail("empty; expected for example latency=300,jitter=100,failure=0.2")
    }
    var settings = SimulationSettings()
    var seen: Set<String> = []
    for rawPart in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
      let part = Substring(rawPart.trimmingSpaces)
      guard !part.isEmpty else { throw fail("empty setting between commas") }
      guard let equals = part.firstIndex(of: "=") else {
        throw fail("\"\(part)\" is not KEY=VALUE (keys: latency, jitter, failure, status, seed)")
      }
      let key = part[..<equals].trimmingSpaces.lowercased()
      let value = part[part.index(after: equals)...].trimmingSpaces
      guard !value.isEmpty else { throw fail("\(key) has no value") }
      guard seen.insert(key).inserted else { throw fail("\(key) is given twice") }
      switch key {
      case "latency", "jitter":
        let digits = value.hasSuffix("ms") ? String(value.dropLast(2)) : value
        guard let ms = UInt64(digits), ms <= 3_600_000 else {
          throw fail("\(key)=\(value) is not a whole number of milliseconds from 0 to 3600000")
        }
        if key == "latency" { settings.latency = .milliseconds(ms) } else { settings.jitter = .milliseconds(ms) }
      case "failure":
        let isPercent = value.hasSuffix("%")
        guard let number = Double(isPercent ? String(value.dropLast()) : value), number.isFinite else {
          throw fail("failure=\(value) is not a number (a rate from 0 to 1, or a percentage such as 10%)")
        }
        let rate = isPercent ? number / 100 : number
        guard (0...1).contains(rate) else {
          throw fail("failure=\(value) is out of range: the rate must be from 0 to 1 (or 0% to 100%)")
        }
        settings.failureRate = rate
      case "status":
        guard let status = Int(value), (400...599).contains(status) else {
          throw fail("status=\(value) is not an HTTP error status from 400 to 599")
        }
        settings.failureStatus = status
      case "seed":
        guard let seed = UInt64(value) else { throw fail("seed=\(value) is not a whole number ≥ 0") }
        settings.seed = seed
      default:
        throw fail("unknown setting \"\(key)\" (keys: latency, jitter, failure, status, seed)")
      }
    }
    return settings
  }
}

extension StringProtocol {
  fileprivate var trimmingSpaces: String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
      return ""
    }
    return String(self[first...last])
  }
}
