import EventLoop
import Posix

/// Evictions for the count (`--max-entities`, `--max-lists`) or the bytes (`--max-held-bytes`) say the limit is too small
/// for what the clients use, worth a line at info; but under steady pressure they come
/// every turn. So they are summed: the first pass is reported at once, later ones at
/// most once an `interval`, in one line. Evictions of what sat idle are normal: debug.
final class EvictionReport {
  static let interval = Duration.seconds(60)
  private let loop: EventLoop
  private var entities = 0
  private var lists = 0
  private var passes = 0
  private var lastLine: LoopInstant?
  private var timer: EventLoop.TimerID?

  init(loop: EventLoop) { self.loop = loop }

  deinit { if let timer { loop.cancel(timer) } }

  /// Evictions for `--max-held-bytes`: reported in the same summed line.
  func evictedForBytes(entities: Int = 0, lists: Int = 0) { evictedForCount(entities: entities, lists: lists) }

  func evictedForCount(entities: Int = 0, lists: Int = 0) {
    guard entities + lists > 0, Log.isEnabled(.info) else { return }
    self.entities += entities
    self.lists += lists
    passes += 1
    guard timer == nil else { return }
    let now = loop.clock.now
    guard let lastLine, now - lastLine < Self.interval else { return write() }
    timer = loop.schedule(after: Self.interval - (now - lastLine)) { [weak self] in
      self?.timer = nil
      self?.write()
    }
  }

  /// Writes what was summed and not yet told (the server stops within the interval).
  func flush() {
    if let timer { loop.cancel(timer) }
    timer = nil
    write()
  }

  private func write() {
    lastLine = loop.clock.now
    guard passes > 0 else { return }
    Log.event(
      .info, "eviction",
      "evicted under pressure (over --max-entities, --max-lists or --max-held-bytes), least recently used first",
      [.init("entities", entities), .init("lists", lists), .init("passes", passes)])
    (entities, lists, passes) = (0, 0, 0)
  }
}
