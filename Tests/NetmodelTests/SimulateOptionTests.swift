import NetworkModels
import Testing

@testable import netmodel

/// `serve --simulate`'s text: every key in any order, and a bad value refused with a
/// message that names the option and the bad part.
@Suite struct SimulateOptionTests {
  @Test func parsesEveryKeyInAnyOrder() throws {
    #expect(
      try SimulationSettings.parse(option: "latency=300,jitter=100,failure=0.2")
        == SimulationSettings(latency: .milliseconds(300), jitter: .milliseconds(100), failureRate: 0.2))
    #expect(
      try SimulationSettings.parse(option: "status=503, failure=10% ,latency=5ms,seed=12")
        == SimulationSettings(latency: .milliseconds(5), failureRate: 0.1, failureStatus: 503, seed: 12))
    #expect(try SimulationSettings.parse(option: "failure=1") == SimulationSettings(failureRate: 1))
    #expect(try SimulationSettings.parse(option: "jitter=0") == SimulationSettings())
    #expect(try SimulationSettings.parse(option: "LATENCY=7") == SimulationSettings(latency: .milliseconds(7)))
  }

  @Test(arguments: [
    ("", "empty"),
    ("latency=100,,failure=0.1", "empty setting"),
    ("latency", "\"latency\" is not KEY=VALUE"),
    ("delay=100", "unknown setting \"delay\""),
    ("latency=-5", "latency=-5"),
    ("latency=fast", "latency=fast"),
    ("jitter=1.5", "jitter=1.5"),
    ("failure=abc", "failure=abc is not a number"),
    ("failure=1.5", "failure=1.5 is out of range"),
    ("failure=-0.1", "failure=-0.1 is out of range"),
    ("failure=nan", "failure=nan"),
    ("failure=150%", "failure=150% is out of range"),
    ("status=200", "status=200"),
    ("status=abc", "status=abc"),
    ("latency=1,latency=2", "latency is given twice"),
    ("latency=", "latency has no value"),
    ("seed=-1", "seed=-1"),
  ])
  func rejectsABadSpecNamingTheBadPart(spec: String, expected: String) {
    do {
      let settings = try SimulationSettings.parse(option: spec)
      Issue.record("\(spec) was accepted as \(settings)")
    } catch {
      #expect(error.message.contains(expected), "\(error.message)")
      #expect(error.message.hasPrefix("--simulate \(spec): "))
    }
  }
}
