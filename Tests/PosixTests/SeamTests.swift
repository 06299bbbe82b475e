import Posix
import Testing

/// What layers above Posix now ask of it instead of calling Glibc themselves.
@Suite struct SeamTests {
  @Test func firstOffsetFindsTheFirstByteAndNothingInAnEmptyOrByteFreeBuffer() {
    let bytes: [UInt8] = Array("ab\ncd\n".utf8)
    bytes.withUnsafeBytes { buffer in
      #expect(Memory.firstOffset(of: 0x0A, in: buffer) == 2)
      #expect(Memory.firstOffset(of: 0x0A, in: UnsafeRawBufferPointer(rebasing: buffer[3...])) == 2)
      #expect(Memory.firstOffset(of: 0x0A, in: UnsafeRawBufferPointer(rebasing: buffer[0..<2])) == nil)
      #expect(Memory.firstOffset(of: 0x0A, in: UnsafeRawBufferPointer(rebasing: buffer[6...])) == nil)
    }
  }

  @Test func pollSaysWhichDescriptorHasBytesAndSkipsAnUnwatchedEntry() throws {
    let (quiet, quietPeer) = try FileDescriptor.socketPair()
    let (talking, talkingPeer) = try FileDescriptor.socketPair()
    defer { [quiet, quietPeer, talking, talkingPeer].forEach { $0.close() } }
    try talkingPeer.writeAll("x")
    let ready = try Poll.readable([quiet, nil, talking], timeout: .seconds(5))
    #expect(ready == [false, false, true])
    #expect(try Poll.readable([quiet], timeout: .zero) == [false])
  }

  /// Sized by the file, read whole: at every size around the chunk's, from an offset,
  /// and from a descriptor that has no size (a socket, read until its peer closes).
  @Test(arguments: [0, 1, 4095, 4096, 4097, 65_536, 200_001])
  func readToEndReadsEveryByteOfAFileOrAStream(size: Int) throws {
    let path = "/tmp/netmodel-readToEnd-\(Process.id)-\(size)"
    defer { try? FileSystem.removeFile(path) }
    let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
    let writer = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate])
    try writer.writeAll(bytes)
    writer.close()
    let file = try FileDescriptor.open(path, .readOnly)
    defer { file.close() }
    #expect(try file.readToEnd() == bytes)
    #expect(try file.readToEnd() == [], "at the end: nothing more")

    // What fits in the socket's buffer before anyone reads.
    let streamed = Array(bytes.prefix(60_000))
    let (one, other) = try FileDescriptor.socketPair()
    defer { one.close() }
    try other.writeAll(streamed)
    other.close()
    #expect(try one.readToEnd() == streamed)
  }

  /// A reader's limit: a file of exactly that many bytes is read, one byte more is
  /// refused, never handed over in part; a sparse file whose size says 64 GiB is
  /// refused after at most the limit is read, not allocated at the size it tells.
  @Test func readToEndRefusesAFileLargerThanItsLimit() throws {
    let path = "/tmp/netmodel-readToEnd-limit-\(Process.id)"
    defer { try? FileSystem.removeFile(path) }
    let writer = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate])
    try writer.writeAll(Array(repeating: UInt8(ascii: "x"), count: 5000))
    writer.close()
    #expect(try FileSystem.readFile(path, atMost: 5000).count == 5000)
    let over = #expect(throws: Errno.self) { try FileSystem.readFile(path, atMost: 4999) }
    #expect(over?.code == Errno.fileTooLarge)
    #expect(over.map { "\($0)" }?.contains(path) == true, "the message names the file")

    let sparse = try FileDescriptor.open(path, .readWrite)
    try sparse.truncate(toSize: 64 << 30)
    sparse.close()
    let huge = #expect(throws: Errno.self) { try FileSystem.readFile(path, atMost: 1 << 20) }
    #expect(huge?.code == Errno.fileTooLarge)
  }

  @Test func aSocketIsNoTerminalAndHasNoSizeOrKeyMode() throws {
    let (one, other) = try FileDescriptor.socketPair()
    defer { [one, other].forEach { $0.close() } }
    #expect(!Terminal.isTerminal(one))
    #expect(Terminal.size(of: one) == nil)
    #expect(Terminal.KeyByKey(one) == nil)
  }

  @Test func theErrnoNamesAreTheCodesTheSystemReports() throws {
    let (one, other) = try FileDescriptor.socketPair()
    defer { one.close() }
    try one.setNonBlocking()
    var byte: UInt8 = 0
    let empty = #expect(throws: Errno.self) { try one.read(into: &byte, count: 1) }
    #expect(empty?.code == Errno.wouldBlock)
    other.close()
    Process.ignoreBrokenPipes()
    let gone = #expect(throws: Errno.self) { try one.writeAll("x") }
    #expect(gone?.code == Errno.brokenPipe)

    let file = try FileDescriptor.open("/dev/null", .readOnly)
    defer { file.close() }
    let refused = #expect(throws: Errno.self) { try Epoll().add(file, events: .readable, token: 0) }
    #expect(refused?.code == Errno.notPermitted)
  }
}
