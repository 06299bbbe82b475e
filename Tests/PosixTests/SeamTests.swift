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
