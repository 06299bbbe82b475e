import JSONRPC
import TestSupport
import Testing

/// What a splitter yields, as comparable values.
enum Piece: Equatable, CustomStringConvertible {
  case message(String)
  case oversized(Int?)
  case badHeader

  var description: String {
    switch self {
    case .message(let text): return "message(\(text))"
    case .oversized(let n): return "oversized(\(String(describing: n)))"
    case .badHeader: return "badHeader"
    }
  }
}

func split(_ input: [UInt8], chunks: [Int], limit: Int = 1 << 20) -> [Piece] {
  var splitter = FrameSplitter(maxMessageBytes: limit)
  var pieces: [Piece] = []
  var offset = 0
  var index = 0
  while offset < input.count {
    let size = min(chunks[index % chunks.count], input.count - offset)
    index += 1
    splitter.append(Array(input[offset..<offset + size]))
    offset += size
    while let frame = splitter.next() {
      switch frame {
      case .message(let bytes): pieces.append(.message(String(decoding: bytes, as: UTF8.self)))
      case .oversized(let n): pieces.append(.oversized(n))
      case .badHeader: pieces.append(.badHeader)
      }
    }
  }
  return pieces
}

func lsp(_ body: String, extraHeaders: String = "") -> String {
  "Content-Length: \(body.utf8.count)\r\n\(extraHeaders)\r\n\(body)"
}

@Suite struct FrameSplitterTests {
  static let bodies = [
    #"{"jsonrpc":"2.0","id":1,"method":"stats"}"#,
    #"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"é","method":"x"}]"#,
    #"{"jsonrpc":"2.0","id":2,"method":"a","params":{"text":"line\nbreak ü 🎉"}}"#,
  ]

  @Test func newlineDelimitedWholeAndByteByByteAgree() {
    let input = Array((FrameSplitterTests.bodies.joined(separator: "\n") + "\r\n\n  \n").utf8)
    let whole = split(input, chunks: [input.count])
    #expect(whole == FrameSplitterTests.bodies.map(Piece.message))
    #expect(split(input, chunks: [1]) == whole)
  }

  @Test func contentLengthWholeByteByByteAndRandomChunksAgree() {
    let input = Array(
      (lsp(FrameSplitterTests.bodies[0])
        + lsp(FrameSplitterTests.bodies[1], extraHeaders: "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n")
        + "\r\n" + lsp(FrameSplitterTests.bodies[2])).utf8)
    let expected = FrameSplitterTests.bodies.map(Piece.message)
    #expect(split(input, chunks: [input.count]) == expected)
    #expect(split(input, chunks: [1]) == expected)
    var rng = SeededRandom(state: 42)
    for _ in 0..<200 {
      let chunks = (0..<16).map { _ in Int.random(in: 1...40, using: &rng) }
      #expect(split(input, chunks: chunks) == expected)
    }
  }

  @Test func framingIsDetectedFromTheFirstNonWhitespaceByte() {
    var lower = FrameSplitter()
    lower.append(Array("\r\n  content-length: 2\r\n\r\n{}".utf8))
    #expect(lower.next() == .message(ArraySlice("{}".utf8)))
    #expect(lower.framing == .contentLength)

    var ndjson = FrameSplitter()
    ndjson.append(Array(" [1]\n".utf8))
    #expect(ndjson.next() == .message(ArraySlice("[1]".utf8)))
    #expect(ndjson.framing == .newlineDelimited)
  }

  @Test func oversizedContentLengthMessageIsSkippedAndTheNextOneRead() {
    let big = String(repeating: "x", count: 300)
    let input = Array((lsp(big) + lsp(#"{"ok":1}"#)).utf8)
    for chunks in [[input.count], [1], [7, 13, 64]] {
      #expect(split(input, chunks: chunks, limit: 100) == [.oversized(300), .message(#"{"ok":1}"#)])
    }
  }

  /// Found by FuzzFrames: a line of exactly the limit ending in CRLF, whose CR came in
  /// one read and LF in the next, was reported oversized: the CR, which is not part of
  /// the message, was counted while the line was still open.
  @Test func lineOfExactlyTheLimitWithCRLFSplitBeforeTheLF() {
    let input = Array("abcd\r\nxy\r\n".utf8)
    let expected: [Piece] = [.message("abcd"), .message("xy")]
    #expect(split(input, chunks: [input.count], limit: 4) == expected)
    #expect(split(input, chunks: [5, 1, 4], limit: 4) == expected)
    #expect(split(input, chunks: [1], limit: 4) == expected)
  }

  @Test func oversizedLineIsSkippedAndTheNextOneRead() {
    let big = "{" + String(repeating: " ", count: 300) + "}"
    let input = Array((big + "\n" + #"{"ok":1}"# + "\n").utf8)
    #expect(split(input, chunks: [input.count], limit: 100) == [.oversized(302), .message(#"{"ok":1}"#)])
    let pieces = split(input, chunks: [1], limit: 100)
    #expect(pieces.count == 2)
    #expect(pieces.last == .message(#"{"ok":1}"#))
    if case .oversized = pieces.first {} else { Issue.record("expected oversized first, got \(pieces)") }
  }

  @Test func headersWithoutContentLengthAreReportedAndSkipped() {
    let input = Array(("Content-Type: x\r\n\r\n" + lsp("{}")).utf8)
    #expect(split(input, chunks: [input.count]) == [.badHeader, .message("{}")])
  }

  @Test func overlongHeadersGiveTheSameFramesHoweverTheyArrive() {
    let padded = "Content-Length: 2\r\nX-Pad: " + String(repeating: "a", count: 8200) + "\r\n\r\n{}"
    let input = Array((padded + lsp("[]")).utf8)
    let expected: [Piece] = [.badHeader, .message("[]")]
    #expect(split(input, chunks: [input.count]) == expected)
    for chunks in [[1], [4097], [3, 5000, 7], [8191, 2, 2]] {
      #expect(split(input, chunks: chunks) == expected, "chunks \(chunks)")
    }
  }

  @Test func theLengthHeaderIsFoundInAnyCaseAndOnlyUnderItsName() {
    // The name is compared without a String: any ASCII case is the header, and a byte
    // that case folding would turn into one of its letters is not.
    let bodies = ["{}", "[]", "{\"a\":1}"]
    let cased = ["content-length", "CONTENT-LENGTH", "Content-length"].enumerated().map { index, name in
      "\(name): \(bodies[index].utf8.count)\r\n\r\n\(bodies[index])"
    }
    let input = Array(cased.joined().utf8)
    #expect(split(input, chunks: [input.count]) == bodies.map(Piece.message))
    #expect(split(input, chunks: [1]) == bodies.map(Piece.message))
    // "\r" | 0x20 is "-": a name with a control byte there is another header.
    let lookalike = Array(("Content\rLength: 2\r\n\r\n" + lsp("{}")).utf8)
    #expect(split(lookalike, chunks: [lookalike.count]).first == .badHeader)
    // With several, the last one counts; other headers around it are ignored.
    let twice = Array("Content-Length: 99\r\nX-A: 1\r\ncontent-length: 2\r\nX-B: b:c\r\n\r\n{}".utf8)
    #expect(split(twice, chunks: [twice.count]) == [.message("{}")])
  }

  @Test func spacesInsideTheLengthAreNotALength() {
    let input = Array(
      "Content-Length: 1 2\r\n\r\n".utf8 + Array(repeating: UInt8(ascii: "x"), count: 12) + Array(lsp("{}").utf8))
    #expect(split(input, chunks: [input.count]).first == .badHeader)
  }

  @Test func aLastLineWithoutItsNewlineIsStillAMessageAtEndOfInput() {
    var splitter = FrameSplitter()
    splitter.append(Array(#"{"a":1}"#.utf8) + [0x0A] + Array(#"{"b":2}"#.utf8))
    #expect(splitter.next() == .message(ArraySlice(#"{"a":1}"#.utf8)))
    #expect(splitter.next() == nil)
    #expect(splitter.finishInput() == .message(ArraySlice(#"{"b":2}"#.utf8)))
    #expect(splitter.finishInput() == nil)

    var lsp = FrameSplitter()
    lsp.append(Array("Content-Length: 10\r\n\r\n{}".utf8))
    #expect(lsp.next() == nil)
    #expect(lsp.finishInput() == nil, "a truncated Content-Length body is not a message")
  }

  @Test func bufferStaysBoundedAfterManyMessages() {
    var splitter = FrameSplitter()
    let message = Array((#"{"jsonrpc":"2.0","id":1,"method":"stats"}"# + "\n").utf8)
    for _ in 0..<10_000 {
      splitter.append(message)
      while splitter.next() != nil {}
    }
    #expect(splitter.bufferedByteCount == 0)
  }
}
