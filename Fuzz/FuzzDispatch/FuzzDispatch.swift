// libFuzzer target over the whole inbound path: socket bytes → FrameSplitter →
// JSON.parse → Dispatcher → NetmodelService handlers → reply framing → socket.
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
// differ: `stats` (uptime and counters) and oversized lines (`data.size` is how much
// had arrived when the limit was crossed).

import EventLoop
import Glibc
import JSON
import JSONRPC
import Service
import TestSupport

@_silgen_name("LLVMFuzzerRunDriver")
func llvmFuzzerRunDriver(
  _ argc: UnsafeMutablePointer<Int32>,
  _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
  _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Small enough that the fuzzer (inputs up to 8 KiB) reaches the oversized paths.
let maxMessageBytes = 4096

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

/// One loop, server and service for the whole process, as in production; a fresh
/// connection per run.
final class Harness {
  let server: RPCServer
  private(set) var service: NetmodelService

  init() throws {
    let loop = try EventLoop()
    server = RPCServer(loop: loop, maxMessageBytes: maxMessageBytes)
    service = NetmodelService(server: server, instance: "0123456789abcdef")
  }

  /// `shutdown` and `exit` leave the service refusing everything; start each run from
  /// a fresh one so later inputs (and the split run) reach the handlers again.
  /// (`exit` only stops `loop.run()`, which the harness never calls.)
  private func resetServiceIfNeeded() {
    if service.shutdownRequested || service.exitCode != nil {
      service = NetmodelService(server: server, instance: "0123456789abcdef")
    }
  }

  /// Serves one connection that sends `payload` (in chunks when `plan` is given) and
  /// returns every byte the server wrote back.
  func run(_ payload: UnsafeBufferPointer<UInt8>, plan: ChunkPlan?) throws -> [UInt8] {
    resetServiceIfNeeded()
    let peer = try InProcessPeer(server: server)
    let connection = peer.connection
    var output: [UInt8] = []
    if var plan {
      // At most ~256 chunks: each costs a loop iteration and a few syscalls, and
      // 1-byte chunks over an 8 KiB input would cut the exec rate tenfold.
      let minimum = (payload.count + 255) / 256
      var offset = 0
      var chunks = 0
      while offset < payload.count {
        let end = min(payload.count, offset + max(minimum, plan.nextSize()))
        try peer.write(Array(payload[offset..<end]))
        chunks += 1
        // One loop iteration per chunk; the replies are read now and then (each read
        // allocates a 64 KiB buffer, which would dominate with 1-byte chunks).
        if chunks % 16 == 0 {
          output += try peer.rawOutput(iterations: 1)
        } else {
          try server.loop.runOnce(wait: false)
        }
        offset = end
      }
    } else {
      try peer.write(Array(payload))
    }
    output += try drain(peer)
    precondition(!peer.peerClosed, "the server closed a connection whose peer was still open")

    peer.closeWrite()
    var iterations = 0
    while !connection.isClosed && iterations < 8 {
      try server.loop.runOnce(wait: false)
      iterations += 1
    }
    precondition(
      connection.isClosed, "connection \(connection.id) still open after its peer closed")
    precondition(
      server.connections.isEmpty, "the server still holds \(server.connections.count) connection(s)"
    )
    return output
  }

  /// Runs the loop and reads replies until the server has nothing left to say.
  private func drain(_ peer: InProcessPeer) throws -> [UInt8] {
    var output: [UInt8] = []
    var idle = 0
    var iterations = 0
    while idle < 2 {
      iterations += 1
      precondition(iterations < 100_000, "the server never went idle")
      let bytes = try peer.rawOutput(iterations: 1)
      output += bytes
      if peer.peerClosed { break }
      idle = bytes.isEmpty && peer.connection.unsentByteCount == 0 ? idle + 1 : 0
    }
    return output
  }

  func fuzz(_ data: UnsafeBufferPointer<UInt8>) throws {
    guard let selector = data.first else { return }
    let payload = UnsafeBufferPointer(rebasing: data[1...])
    let statsBefore = server.statistics.requestsByMethod["stats"] ?? 0
    let whole = try run(payload, plan: nil)
    let split = try run(payload, plan: ChunkPlan(selector: selector))
    let statsCalled = (server.statistics.requestsByMethod["stats"] ?? 0) != statsBefore
    if dump { write(stderr: "--- whole (\(whole.count) bytes)\n\(escaped(whole))\n") }
    let oversized = whole.contains(oversizedMarker) || split.contains(oversizedMarker)
    if whole != split && !statsCalled && !oversized {
      report(
        "whole and split runs replied differently", whole: whole, split: split, selector: selector,
        payloadCount: payload.count)
    }
  }

  private let oversizedMarker = Array("exceeds the limit of".utf8)
  /// FUZZ_DUMP=1 prints each input's replies (to see what a seed or crash does).
  private let dump = getenv("FUZZ_DUMP") != nil

  private func report(
    _ what: String, whole: [UInt8], split: [UInt8], selector: UInt8, payloadCount: Int
  ) -> Never {
    var plan = ChunkPlan(selector: selector)
    let minimum = (payloadCount + 255) / 256
    let sizes = (0..<8).map { _ in String(max(minimum, plan.nextSize())) }.joined(separator: ",")
    let text = """
      FuzzDispatch: \(what) (chunk sizes \(sizes),…)
      --- whole (\(whole.count) bytes)
      \(escaped(whole))
      --- split (\(split.count) bytes)
      \(escaped(split))

      """
    write(stderr: text)
    abort()
  }

  private func write(stderr text: String) {
    _ = text.withCString { Glibc.write(2, $0, strlen($0)) }
  }

  private func escaped(_ bytes: [UInt8]) -> String {
    var result = ""
    for byte in bytes.prefix(4096) {
      switch byte {
      case 0x0A: result += "\\n\n"
      case 0x0D: result += "\\r"
      case 0x20..<0x7F where byte != 0x5C: result.unicodeScalars.append(Unicode.Scalar(byte))
      default: result += "\\x" + String(byte, radix: 16).leftPadded(to: 2)
      }
    }
    return bytes.count > 4096 ? result + "…" : result
  }
}

extension String {
  fileprivate func leftPadded(to width: Int) -> String {
    String(repeating: "0", count: max(0, width - count)) + self
  }
}

nonisolated(unsafe) var harness: Harness?

@main
struct FuzzDispatch {
  static func main() {
    // The harness closes the peer end while replies may still be queued: the server
    // must see EPIPE, not die of SIGPIPE (netmodel's main does the same).
    signal(SIGPIPE, SIG_IGN)
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    let status = llvmFuzzerRunDriver(&argc, &argv) { data, size in
      do {
        if harness == nil { harness = try Harness() }
        let buffer = UnsafeBufferPointer(start: data, count: data == nil ? 0 : size)
        try harness!.fuzz(buffer)
      } catch {
        fatalError("harness I/O failed: \(error)")
      }
      return 0
    }
    exit(status)
  }
}
