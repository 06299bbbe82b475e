// FrameSplitter on its own: byte 0 picks the message limit and how the rest is cut.
// Oracles: the same frames whether the bytes come at once or in chunks (only an
// oversized newline-delimited line's `byteCount` may differ: it is what had arrived
// when the limit was crossed); no message above the limit; a newline-delimited message
// holds no line feed and starts with no whitespace; what the splitter holds stays
// bounded by one message and its headers.

import FuzzSupport
import JSONRPC

enum Seen: Equatable {
  case message([UInt8])
  case oversized(Int?)
  case badHeader(String)
}

let limits = [1, 2, 16, 64, 200, 1024, 4096, 65536]

func frames(_ payload: UnsafeRawBufferPointer, limit: Int, chunks: ((Int) -> Int)?) -> [Seen] {
  var splitter = FrameSplitter(maxMessageBytes: limit)
  var seen: [Seen] = []
  func take() {
    while let frame = splitter.next() {
      switch frame {
      case .message(let bytes):
        if bytes.count > limit { fuzzFailure("a message of \(bytes.count) bytes passed the limit of \(limit)") }
        if splitter.framing == .newlineDelimited {
          if bytes.contains(0x0A) { fuzzFailure("a newline-delimited message holds a line feed") }
          if let first = bytes.first, [0x20, 0x09, 0x0A, 0x0D].contains(first) {
            fuzzFailure("a message starts with whitespace")
          }
        }
        seen.append(.message(Array(bytes)))
      case .oversized(let count):
        seen.append(.oversized(splitter.framing == .newlineDelimited ? nil : count))
      case .badHeader(let reason): seen.append(.badHeader(reason))
      }
    }
    // What is held is part of one unfinished frame: its headers (at most 8 KiB before
    // they are skipped) and a body within the limit. More is memory a peer could grow.
    if splitter.bufferedByteCount > limit + 8192 + 16 {
      fuzzFailure("the splitter holds \(splitter.bufferedByteCount) bytes with a limit of \(limit)")
    }
  }
  var offset = 0
  var index = 0
  // At most ~64 chunks: the rate stays near 20,000 exec/s as inputs grow, and
  // short inputs (where frame boundaries are dense) are still cut byte by byte.
  let minimum = (payload.count + 63) / 64
  while offset < payload.count {
    let size = chunks.map { max(minimum, $0(index)) } ?? payload.count
    let end = min(payload.count, offset + size)
    splitter.append(UnsafeRawBufferPointer(rebasing: payload[offset..<end]))
    take()
    offset = end
    index += 1
  }
  if let last = splitter.finishInput() {
    switch last {
    case .message(let bytes): seen.append(.message(Array(bytes)))
    case .oversized(let count): seen.append(.oversized(splitter.framing == .newlineDelimited ? nil : count))
    case .badHeader(let reason): seen.append(.badHeader(reason))
    }
  }
  return seen
}

@main
struct FuzzFrames {
  static func main() {
    // Globals are made on first use: before the first input, or their allocations
    // would count as that input's leak.
    withoutLeakChecks { _ = limits }
    runFuzzer { data in
      guard data.count >= 2 else { return }
      let limit = limits[Int(data[0] & 7)]
      let seed = UInt32(data[1])
      let payload = UnsafeRawBufferPointer(rebasing: data[2...])
      let whole = frames(payload, limit: limit, chunks: nil)
      // Chunk sizes 1...(1 << (selector bits 3-5)), from a tiny LCG seeded by byte 1.
      let cap = 1 << Int((data[0] >> 3) & 7)
      let split = frames(payload, limit: limit) { index in
        let state = (seed &+ UInt32(index)) &* 1_103_515_245 &+ 12345
        return Int((state >> 16) % UInt32(cap)) + 1
      }
      if whole != split {
        fuzzFailure("whole and split found different frames:\n\(whole)\n\(split)", input: data)
      }
    }
  }
}
