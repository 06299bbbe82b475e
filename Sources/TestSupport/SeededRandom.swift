import NetworkModels

/// The product's `SplitMix64` with the helpers random test inputs want: deterministic,
/// so a test's inputs (and a failing one) repeat from run to run.
public struct SeededRandom: RandomNumberGenerator {
  private var generator: SplitMix64

  public init(state: UInt64) { generator = SplitMix64(seed: state) }

  public mutating func next() -> UInt64 { generator.next() }

  public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
  public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
  public mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }
}
