import Posix

/// Where this run's versions start, so that they never go backwards across restarts
/// on one state folder: a client holding version 7 from the last run keeps every state
/// of this one. Each start begins at the mark the last run reserved, and reserves a
/// block above it before it shows a version above the mark; a run that uses its block
/// up reserves more (a rare write), before any version beyond the block is shown.
///
/// Versions stay at or below `limit` (2^53 − 1), the largest integer every JSON client
/// reads exactly: a start whose mark leaves no room for a block below it refuses to
/// start (`Exhausted`), and a run that would pass it stops with the same message.
/// Neither can come from counting (a run counts 2^20 versions per reservation; 2^53
/// is centuries of changes): only from a mark written by hand.
public final class VersionBase {
  /// Added to every entity's and list's own count of changes.
  public let base: UInt64
  /// Counts below this are covered by the persisted reservation.
  public private(set) var headroom: UInt64
  /// The count of the newest change of this run. Every change of an entity or a list
  /// takes the next one, so one number orders every change of the run: what changed
  /// after version V is what shows a version above it (`subscribe`'s `since`).
  public private(set) var count: UInt64 = 0
  private let folder: StateFolder?

  static let fileName = "versions"
  static let block: UInt64 = 1 << 20
  /// The largest version shown: 2^53 − 1 (JavaScript's `Number.MAX_SAFE_INTEGER`).
  public static let limit: UInt64 = (1 << 53) - 1
  /// Where versions continue after a mark that could not be read (set aside): above
  /// anything a run could plausibly have shown, far below `limit`.
  static let afterCorruptMark: UInt64 = 1 << 40

  /// Versions from 0, nothing persisted (tests, fuzzing).
  public init() {
    base = 0
    headroom = .max
    folder = nil
  }

  /// Why a start refuses the state folder's mark: versions have reached `limit`.
  public struct Exhausted: Error, CustomStringConvertible {
    public let file: String
    public let mark: UInt64

    public var description: String {
      "\(file) holds the version mark \(mark): versions have reached the end of their range "
        + "(\(VersionBase.limit), the largest integer JSON clients read exactly); remove \(file) "
        + "to count versions from 0 again, and restart the clients, which would drop the new, lower versions"
    }
  }

  /// Reads the last run's mark from `folder`; this run's first block is reserved by the
  /// first `ensure`, before the first version above the mark is shown, not here: its
  /// write and two fsyncs were most of a start on disk, and a start's first answer
  /// (`initialize`) shows no version. The mark itself (count 0) may be shown before:
  /// the last run never showed it, and the next start, reading the same mark, shows it
  /// for the same unknown state. A mark that is not a decimal number from 0 to `limit`
  /// is a corrupt file: it is kept as `versions.corrupt-<n>`, with a warning, versions
  /// continue from 2^40, and that block is reserved at once (without a mark, the next
  /// start would count from 0). Throws `Exhausted` when the mark leaves no room below
  /// `limit`, and `Errno` when the file cannot be read, moved aside or (after a corrupt
  /// mark) written.
  public init(folder: StateFolder) throws {
    self.folder = folder
    var mark: UInt64 = 0
    var setAside = false
    if let bytes = try folder.read(VersionBase.fileName) {
      switch VersionBase.parseMark(bytes) {
      case .success(let value):
        mark = value
      case .failure(let problem):
        // A mark that cannot be read must not restart versions at 0, nor be trusted.
        let aside = try folder.moveAside(VersionBase.fileName, suffix: "corrupt")
        mark = VersionBase.afterCorruptMark
        setAside = true
        Log.warn(
          "\(folder.file(VersionBase.fileName)) is not a version mark (\(problem)); kept as \(folder.file(aside)), "
            + "versions continue from \(mark)")
      }
    }
    guard mark <= VersionBase.limit - VersionBase.block else {
      throw Exhausted(file: folder.file(VersionBase.fileName), mark: mark)
    }
    base = mark
    headroom = 0
    if setAside { try reserve(covering: 0) }
  }

  /// The mark of a `versions` file: ASCII digits, then at most one newline; a value
  /// above `limit` is refused, before it could overflow any sum.
  static func parseMark(_ bytes: [UInt8]) -> Result<UInt64, MarkProblem> {
    var digits = bytes[...]
    if digits.last == UInt8(ascii: "\n") { digits = digits.dropLast() }
    guard !digits.isEmpty else { return .failure(.empty) }
    var value: UInt64 = 0
    for byte in digits {
      guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return .failure(.notDigits) }
      // value ≤ limit < 2^53 here, so value × 10 + 9 < 2^57 cannot overflow.
      value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
      guard value <= limit else { return .failure(.beyondLimit) }
    }
    return .success(value)
  }

  enum MarkProblem: Error, CustomStringConvertible {
    case empty, notDigits, beyondLimit

    var description: String {
      switch self {
      case .empty: "empty"
      case .notDigits: "not a whole decimal number"
      case .beyondLimit: "above \(VersionBase.limit), the largest version JSON clients read exactly"
      }
    }
  }

  /// The version of the newest change of this run (the base while none was made).
  public var newest: UInt64 { base &+ count }

  /// The count for a new change, covered by the reservation before it is shown.
  @inline(__always)
  public func next() -> UInt64 {
    count &+= 1
    ensure(count)
    return count
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
      headroom = headroom(covering: count)
    }
  }

  private func reserve(covering count: UInt64) throws(Errno) {
    let newHeadroom = headroom(covering: count)
    if let folder {
      try folder.replace(VersionBase.fileName, with: Array("\(base + newHeadroom)\n".utf8))
    }
    headroom = newHeadroom
  }

  /// A block above `count`, cut at `limit`. A count that reaches `limit` would show a
  /// version JSON clients cannot read exactly: the run stops there, as the next start
  /// would refuse the mark.
  private func headroom(covering count: UInt64) -> UInt64 {
    let room = VersionBase.limit - base
    guard count < room else {
      let file = folder?.file(VersionBase.fileName) ?? VersionBase.fileName
      Log.error("\(Exhausted(file: file, mark: base + room)); stopping")
      Process.exit(70)
    }
    return min(count + VersionBase.block, room)
  }
}
