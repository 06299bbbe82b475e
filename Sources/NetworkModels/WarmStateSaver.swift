import EventLoop
import Posix

/// Keeps `WarmStates` in the state folder up to date: written from a timer when
/// something changed, and at a clean stop, never from a request. `scope` names what
/// the states are true of (the environment, its API and values): a start in another
/// one does not use them.
public final class WarmStateSaver {
  static let interval: Duration = .seconds(10)

  private let store: FollowStore
  private let folder: StateFolder
  private let scope: () -> String
  public let maxBytes: Int
  private var savedAtCount: UInt64 = .max
  private var timer: EventLoop.TimerID?
  /// What the last start took from the file, for `stats` and the log.
  public private(set) var restored = 0

  public init(store: FollowStore, folder: StateFolder, maxBytes: Int, scope: @escaping () -> String) {
    self.store = store
    self.folder = folder
    self.maxBytes = maxBytes
    self.scope = scope
  }

  private static func nowMs() -> UInt64 { UInt64(max(0, Process.wallClockSeconds() * 1000)) }

  /// Shows the states the last run left, stale; then saves on a timer. A file that
  /// cannot be read is set aside with a warning; one of another scope is left alone.
  public func start() {
    restore()
    savedAtCount = store.versions.count
    schedule()
  }

  private func restore() {
    let bytes: [UInt8]?
    do { bytes = try folder.read(WarmStates.fileName) } catch {
      return Log.warn("\(folder.file(WarmStates.fileName)) could not be read (\(error)): no warm start")
    }
    guard let bytes else { return }
    switch WarmStates.read(bytes, environment: scope(), nowMs: Self.nowMs()) {
    case .unused(let why):
      Log.event(
        .info, "warm.unused", "the states the last run left are not used",
        [.init("file", folder.file(WarmStates.fileName)), .init("why", why)])
    case .entries(let entries, let skipped):
      restored = store.restore(entries, nowMs: Self.nowMs())
      var fields: [Log.Field] = [.init("states", restored)]
      if skipped > 0 { fields.append(.init("skipped", skipped)) }
      Log.event(.info, "warm.start", "the states the last run confirmed are shown, stale, until asked again", fields)
      if skipped > 0 {
        Log.warn("\(folder.file(WarmStates.fileName)): \(skipped) line(s) that are no state were skipped")
      }
    }
  }

  private func schedule() {
    timer = store.loop.schedule(after: Self.interval) { [weak self] in
      guard let self else { return }
      self.saveIfChanged()
      self.schedule()
    }
  }

  /// Writes the file when a state changed since the last write.
  public func saveIfChanged() {
    guard store.versions.count != savedAtCount else { return }
    savedAtCount = store.versions.count
    let (text, kept) = WarmStates.encode(
      store.warmEntries(nowMs: Self.nowMs()), environment: scope(), maxBytes: maxBytes)
    do {
      try folder.replaceQuickly(WarmStates.fileName, with: text)
      Log.debug("saved \(kept) states for a warm start (\(text.count) bytes)")
    } catch {
      Log.warn("could not save the states for a warm start: \(error)")
    }
  }

  public func stop() {
    if let timer { store.loop.cancel(timer) }
    timer = nil
    saveIfChanged()
  }
}
