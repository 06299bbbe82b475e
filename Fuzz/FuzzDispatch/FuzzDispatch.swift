// libFuzzer target over the whole inbound path: a peer's bytes → Connection →
// FrameSplitter → JSON.parse → Dispatcher → NetmodelService handlers → reply framing
// → the peer (a `MemoryPeer`: the connection's code without a socket's syscalls).
//
// Built and run by scripts/fuzz (see the comment at its top); Package.swift declares
// this target only when NETMODEL_FUZZ is set.
//
// Input format: byte 0 chooses how the rest is cut into chunks (see `ChunkPlan`);
// bytes 1... are what the peer sends. Every input is run twice on a fresh connection:
//
//   1. whole: the payload is written in one go, then the loop runs until idle;
//   2. split: the payload is written chunk by chunk, the loop running between chunks,
//      so frames and headers arrive in pieces.
//
// Oracles: the sanitizers (ASan, Swift runtime traps); every connection must close
// once the peer closes its end (no fd or object leak across millions of runs); and
// both runs must produce the same reply bytes, since framing must not depend on how
// the bytes were cut. That comparison is skipped where the replies legitimately
// differ: `stats` and `inspect` (uptime, counters, the clock), the methods whose
// answers depend on when the backend's answers arrive between requests (the split run
// turns the loop between chunks, so a read may be answered before the next request
// arrives; see `Harness.timingDependent`), and oversized lines (`data.size` is how
// much had arrived when the limit was crossed). Those inputs still face the sanitizers
// and the connection's close.

import EventLoop
import FuzzSupport
import Glibc
import JSON
import JSONRPC
import Posix
import Service

/// Small enough that the fuzzer (inputs up to 4 KiB, see scripts/fuzz) reaches the
/// oversized paths often; smaller inputs also keep a run cheap.
let maxMessageBytes = 1024
/// The most chunks the split run writes (see `Harness.run`).
let maxChunks = 32
/// Fixed, not random: the whole and split runs' replies are compared byte for byte.
let instance = "0123456789abcdef"

/// How the split run cuts the payload: byte 0's low 3 bits pick the largest chunk,
/// bit 3 makes every chunk that size (otherwise sizes are pseudo-random in 1...cap,
/// seeded by the high 4 bits).
struct ChunkPlan {
  static let caps = [1, 2, 3, 5, 8, 17, 64, maxMessageBytes + 1]
  let cap: Int
  let fixed: Bool
  var state: UInt32

  init(selector: UInt8) {
    cap = ChunkPlan.caps[Int(selector & 7)]
    fixed = selector & 8 != 0
    state = UInt32(selector >> 4) &+ 1
  }

  mutating func nextSize() -> Int {
    if fixed { return cap }
    state = state &* 1_103_515_245 &+ 12345
    return Int((state >> 16) % UInt32(cap)) + 1
  }
}

/// A fresh loop, server and service per run, so that nothing one input does reaches
/// the next: `shutdown`/`exit` need no special case, memory stays flat however many
/// entities the fuzzer invents, and an input allocates no more than it frees, which
/// spares libFuzzer's per-input leak check (it reruns an input under LeakSanitizer
/// whenever mallocs outnumber frees; with one long-lived service that was most inputs
/// and two thirds of the time). The peer is a `MemoryPeer`, not a socketpair: the
/// socketpair's syscalls were a quarter of the time (see Fuzz/README.md); the
/// connection still reads in pieces, would block, sees the end of input and EPIPE.
final class Harness {
  /// A method of `timingDependent` was called in the last run: its replies may
  /// legitimately differ between the whole and the split run.
  private var timingDependentCalled = false
  /// Every method that reads or changes what the backend holds, or tells the clock or
  /// counters. Requests run as notifications count too (`requestsByMethod`).
  static let timingDependent = [
    "stats", "inspect", "follow", "unfollow", "setFollowState", "getFollowState", "getEntity", "setInterfaceState",
    "fetchList", "sync", "subscribe", "getMutations",
  ]

  /// Serves one connection that sends `payload` (in chunks when `plan` is given) and
  /// returns every byte the server wrote back.
  func run(_ payload: UnsafeRawBufferPointer, plan: ChunkPlan?) throws -> [UInt8] {
    let loop = try EventLoop()
    // A read buffer of the limit's size, not 64 KiB: a fresh one per run, most of
    // whose pages were new to ASan's allocator (page faults).
    let server = RPCServer(loop: loop, maxMessageBytes: maxMessageBytes, readBufferBytes: maxMessageBytes)
    let service = NetmodelService(server: server, instance: instance)
    // The ledger's times are the wall clock's: fixed, as `instance` is.
    service.ledger.now = { 0 }
    defer { withExtendedLifetime(service) {} }
    let peer = MemoryPeer()
    let connection = server.attach(peer)

    if var plan {
      // At most ~maxChunks chunks, each a loop iteration (256 were most of the time;
      // see Fuzz/README.md). FuzzFrames cuts the frame splitter's input byte by byte;
      // this run is about the connection and dispatch.
      let minimum = (payload.count + maxChunks - 1) / maxChunks
      var offset = 0
      while offset < payload.count {
        let end = min(payload.count, offset + max(minimum, plan.nextSize()))
        peer.write(UnsafeRawBufferPointer(rebasing: payload[offset..<end]))
        try loop.runOnce(wait: false)
        offset = end
      }
    } else {
      peer.write(payload)
    }
    // Run the loop until the server has nothing left to say.
    var idle = 0
    var iterations = 0
    while idle < 2 && !peer.closedByServer {
      iterations += 1
      precondition(iterations < 100_000, "the server never went idle")
      let before = peer.received.count
      try loop.runOnce(wait: false)
      let quiet = peer.received.count == before && connection.unsentByteCount == 0 && !loop.hasQueuedTasks
      idle = quiet ? idle + 1 : 0
    }
    // A socket peer's `exit` ends its session: then, and only then, the server closes it.
    precondition(
      !peer.closedByServer || service.sessionsExited > 0, "the server closed a connection whose peer was still open")

    peer.close()
    iterations = 0
    while !connection.isClosed && iterations < 8 {
      try loop.runOnce(wait: false)
      iterations += 1
    }
    precondition(connection.isClosed, "connection still open after its peer closed")
    precondition(server.connections.isEmpty, "the server still holds \(server.connections.count) connection(s)")
    let called = server.statistics.requestsByMethod
    timingDependentCalled = timingDependentCalled || Harness.timingDependent.contains { called[$0] != nil }
    return peer.received
  }

  func fuzz(_ data: UnsafeRawBufferPointer) throws {
    guard let selector = data.first else { return }
    let payload = UnsafeRawBufferPointer(rebasing: data[1...])
    timingDependentCalled = false
    let whole = try run(payload, plan: nil)
    // A plan whose first chunk holds the whole payload writes it in one go, as the
    // whole run did: running it again would compare a run with itself.
    var plan = ChunkPlan(selector: selector)
    guard max((payload.count + maxChunks - 1) / maxChunks, plan.nextSize()) < payload.count else {
      if dump { writeToStderr("--- whole (\(whole.count) bytes)\n\(escaped(whole))\n") }
      return
    }
    let split = try run(payload, plan: ChunkPlan(selector: selector))
    if dump { writeToStderr("--- whole (\(whole.count) bytes)\n\(escaped(whole))\n") }
    if !same(whole, split) && !timingDependentCalled && !contains(whole, oversizedMarker)
      && !contains(split, oversizedMarker)
    {
      report(
        "whole and split runs replied differently", whole: whole, split: split, selector: selector,
        payloadCount: payload.count)
    }
  }

  /// One `memcmp`: `==` on arrays, compiled here with trace-cmp, reported every byte
  /// it compared to libFuzzer (1.3% of the time; Fuzz/README.md, round six).
  private func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { a in b.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
  }

  /// A plain byte search: `[UInt8].contains(_:)` goes through the generic
  /// string-processing searcher, which took 11% of the time.
  private func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
    guard let first = needle.first, bytes.count >= needle.count else { return needle.isEmpty }
    var index = 0
    while index <= bytes.count - needle.count {
      if bytes[index] == first && bytes[index..<index + needle.count].elementsEqual(needle) { return true }
      index += 1
    }
    return false
  }

  private let oversizedMarker = Array("exceeds the limit of".utf8)
  /// FUZZ_DUMP=1 prints each input's replies (to see what a seed or crash does).
  private let dump = getenv("FUZZ_DUMP") != nil

  private func report(
    _ what: String, whole: [UInt8], split: [UInt8], selector: UInt8, payloadCount: Int
  ) -> Never {
    var plan = ChunkPlan(selector: selector)
    let minimum = (payloadCount + maxChunks - 1) / maxChunks
    let sizes = (0..<8).map { _ in String(max(minimum, plan.nextSize())) }.joined(separator: ",")
    writeToStderr(
      """
      FuzzDispatch: \(what) (chunk sizes \(sizes),…)
      --- whole (\(whole.count) bytes)
      \(escaped(whole))
      --- split (\(split.count) bytes)
      \(escaped(split))

      """)
    abort()
  }
}

@main
struct FuzzDispatch {
  static func main() {
    // Inputs are meant to fail: a warning per failed notification would only bury
    // what the fuzzer reports.
    Log.level = .error
    let harness = Harness()
    runFuzzer { data in
      do {
        try harness.fuzz(data)
      } catch {
        fatalError("harness I/O failed: \(error)")
      }
    }
  }
}
