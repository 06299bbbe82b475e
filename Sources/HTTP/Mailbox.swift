import Posix

/// Messages from one thread to another's loop: `post` appends under a lock and rings the
/// eventfd the receiving loop watches, only when the box was empty (one system call a
/// batch, not a message); the receiver `take`s all there is when it rings.
final class Mailbox<Message: Sendable>: Sendable {
  /// What the receiving loop watches (`register` it for `.readable`).
  let bell: EventFD
  private let messages = Locked<[Message]>([])

  init() throws(Errno) { bell = try EventFD() }

  deinit { bell.fd.close() }

  func post(_ message: Message) {
    let wasEmpty = messages.withLock { messages in
      messages.append(message)
      return messages.count == 1
    }
    if wasEmpty { bell.signal() }
  }

  func post(contentsOf batch: [Message]) {
    let wasEmpty = messages.withLock { messages in
      let wasEmpty = messages.isEmpty
      messages.append(contentsOf: batch)
      return wasEmpty && !batch.isEmpty
    }
    if wasEmpty { bell.signal() }
  }

  /// Everything posted so far, oldest first. The bell is silenced before the box is
  /// emptied: a message posted in between rings it again, where the other order could
  /// leave one unread with the bell quiet.
  func take() -> [Message] {
    bell.drain()
    return messages.withLock { messages in
      var taken: [Message] = []
      swap(&taken, &messages)
      return taken
    }
  }
}
