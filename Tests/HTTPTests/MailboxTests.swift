import EventLoop
import Glibc
import Posix
import Testing

@testable import HTTP

@Suite struct MailboxTests {
  /// A producer thread posting as fast as it can, the loop taking as the bell rings: every
  /// message arrives, once, in order, whatever the interleaving of post and take.
  @Test func everyMessagePostedFromAnotherThreadArrivesOnceInOrder() throws {
    let loop = try EventLoop()
    let box = try Mailbox<Int>()
    var received: [Int] = []
    let registration = try loop.register(box.bell.fd, events: .readable) { _ in
      received += box.take()
    }
    defer { loop.deregister(registration) }
    let count = 20_000
    let producer = try OSThread.start(name: "nm producer") {
      for value in 0..<count {
        if value % 3 == 0 { box.post(contentsOf: [value]) } else { box.post(value) }
      }
    }
    let deadline = Process.monotonicNanoseconds() + 10_000_000_000
    while received.count < count && Process.monotonicNanoseconds() < deadline { try loop.runOnce(wait: true) }
    producer.join()
    #expect(received == Array(0..<count))
    #expect(box.take().isEmpty)
  }

  /// One system call a batch: the bell rings when the first message goes into an empty
  /// box, and not for the ones behind it.
  @Test func theBellRingsOnceForMessagesPostedBeforeATake() throws {
    let box = try Mailbox<String>()
    func rings() -> UInt64 {
      var value: UInt64 = 0
      return Glibc.read(box.bell.fd.rawValue, &value, 8) == 8 ? value : 0
    }
    box.post("a")
    box.post(contentsOf: ["b", "c"])
    box.post("d")
    #expect(rings() == 1)
    #expect(box.take() == ["a", "b", "c", "d"])
    box.post(contentsOf: [])
    #expect(rings() == 0, "nothing posted, nothing rung")
    box.post("e")
    #expect(rings() == 1 && box.take() == ["e"])
  }
}
