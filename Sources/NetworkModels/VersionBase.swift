import Posix

/// Where this run's versions start, so that they never go backwards across restarts
/// on one state folder: a client holding version 7 from the last run keeps every state
/// of this one. Each start begins at the mark the last run reserved, and reserves a
/// block above it; a run that uses its block up reserves more (a rare write), before
/// any version beyond the block is shown.
public final class VersionBase {
  /// Added to every entity's and list's own count of changes.
  public let base: UInt64
  /// Counts below this are covered by the persisted reservation.
  public private(set) var headroom: UInt64
  private let folder: StateFolder?

  static let fileName = "versions"
  static let block: UInt64 = 1 << 20

  /// Versions from 0, nothing persisted (tests, fuzzing).
  public init() {
    base = 0
    headroom = .max
    folder = nil
  }

  /// Reads the last run's mark from `folder` and reserves this run's first block.
  public init(folder: StateFolder) throws(Errno) {
    self.folder = folder
    var mark: UInt64 = 0
    if let bytes = try folder.read(VersionBase.fileName) {
      let text = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == " " }).first
      if let text, let value = UInt64(text) {
        mark = value
      } else {
        // A mark that cannot be read must not restart versions at 0: start above
        // anything a run could plausibly have shown, and say so.
        mark = 1 << 40
        Log.warn("\(folder.file(VersionBase.fileName)) is not a number; versions continue from \(mark)")
      }
    }
    base = mark
    headroom = 0
    try reserve(covering: 0)
  }

  /// Makes sure `count` changes above the base are covered before they are shown.
  @inline(__always)
  public func ensure(_ count: UInt64) {
    guard count >= headroom else { return }
    do {
      try reserve(covering: count)
    } catch {
      // Versions still grow within this run; only a restart after this could repeat
      // one, so go on and say it.
      Log.error("could not save the version mark: \(error)")
      headroom = count &+ VersionBase.block
    }
  }

  private func reserve(covering count: UInt64) throws(Errno) {
    let newHeadroom = count + VersionBase.block
    if let folder {
      try folder.replace(VersionBase.fileName, with: Array("\(base + newHeadroom)\n".utf8))
    }
    headroom = newHeadroom
  }
}
