import EventLoop
import HTTP

/// A single state read's request, from its path cut once, when the backend is made.
/// `Template.fill` parsed the path for every read (its placeholders' names made into
/// strings, the bytes appended one by one, then copied into a `String`).
extension RESTFollows {
  /// The path of a kind's state read as literal runs between its `{id}` and `{id*}`
  /// placeholders, `{kind}` already filled. Made by `Template.fill` itself, with
  /// markers for the id's two forms, so it means what `fill` makes of the path.
  struct SingleReadPath {
    enum Slot {
      case id
      /// `{id*}`: the id's "/"-separated parts are path segments (RFC 6570's explode).
      case idSegments
    }

    /// `literals.count == slots.count + 1`: literal, slot, literal, …
    let literals: [[UInt8]]
    let slots: [Slot]

    private static let idMarker: UInt8 = 0
    private static let idSegmentsMarker: UInt8 = 1

    /// nil when the read has more than a path (a query, a body), or its path holds a
    /// byte used as a marker: `request(_:kind:id:)` fills those as before.
    init?(_ endpoint: RESTConfiguration.Endpoint, kind: String) {
      guard endpoint.query.isEmpty, endpoint.body == nil,
        !endpoint.path.utf8.contains(where: { $0 == Self.idMarker || $0 == Self.idSegmentsMarker })
      else { return nil }
      let id = String(decoding: [Self.idMarker], as: UTF8.self)
      let idSegments = String(decoding: [Self.idSegmentsMarker], as: UTF8.self)
      let marked = Template.fill(
        endpoint.path, prefix: "",
        value: { $0 == "id" ? id : $0 == "id*" ? idSegments : $0 == "kind" ? kind : nil },
        encode: { $0 == id || $0 == idSegments ? $0 : Template.percentEncode($0) })
      var literals: [[UInt8]] = [[]]
      var slots: [Slot] = []
      for byte in marked.utf8 {
        switch byte {
        case Self.idMarker, Self.idSegmentsMarker:
          slots.append(byte == Self.idMarker ? .id : .idSegments)
          literals.append([])
        default:
          literals[literals.count - 1].append(byte)
        }
      }
      self.literals = literals
      self.slots = slots
    }

    /// `prefix` + the path with `id` percent-encoded into its slots: one allocation,
    /// the string's own.
    func url(prefix: String, id: String) -> String {
      var prefix = prefix
      var id = id
      return prefix.withUTF8 { prefix in
        id.withUTF8 { id in
          let capacity = prefix.count + literals.reduce(0) { $0 + $1.count } + slots.count * id.count * 3
          return String(unsafeUninitializedCapacity: capacity) { buffer in
            var end = 0
            func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
              guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
              UnsafeMutableRawPointer(buffer.baseAddress! + end).copyMemory(from: base, byteCount: bytes.count)
              end += bytes.count
            }
            copy(prefix)
            for (index, slot) in slots.enumerated() {
              literals[index].withUnsafeBufferPointer(copy)
              end = Self.percentEncode(id, into: buffer, at: end, keepingSlash: slot == .idSegments)
            }
            literals[slots.count].withUnsafeBufferPointer(copy)
            return end
          }
        }
      }
    }

    /// `Template.percentEncode(_:)` of `bytes` written at `end`, returning the new end;
    /// with `keepingSlash`, "/" stays (each segment encoded, joined by "/").
    static func percentEncode(
      _ bytes: UnsafeBufferPointer<UInt8>, into buffer: UnsafeMutableBufferPointer<UInt8>, at end: Int,
      keepingSlash: Bool
    ) -> Int {
      let hex: StaticString = "0123456789ABCDEF"
      var end = end
      for byte in bytes {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
          UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
          UInt8(ascii: "~"):
          buffer[end] = byte
          end += 1
        case UInt8(ascii: "/") where keepingSlash:
          buffer[end] = byte
          end += 1
        default:
          buffer[end] = UInt8(ascii: "%")
          buffer[end + 1] = hex.utf8Start[Int(byte >> 4)]
          buffer[end + 2] = hex.utf8Start[Int(byte & 15)]
          end += 3
        }
      }
      return end
    }
  }

  /// Sends a kind's single state read, and answers what it says. One closure from the
  /// HTTP client back to `completion`: the answer's closure holds the boxed read, not a
  /// copy of its endpoint (every string and table of it retained, per read), and a
  /// wrapper for the figures was another allocation and weak load. The rate limit is
  /// the screen's, read before the next request goes out.
  func sendSingleRead(_ key: EntityKey, _ read: StateRead, _ completion: @escaping Completion) {
    var request = singleReadRequest(read, kind: key.kind, id: key.id)
    // A caller's read does not wait out a long rate limit that starts while it waits.
    if session.readPriority == .user { request.maxHoldWait = read.maxHoldWait }
    read.figures.inFlight += 1
    let startedAt = session.loop.clock.now
    let world = session.world
    session.http.send(request, priority: session.readPriority, screen: read.rateLimitScreen(session)) {
      [weak self] result in
      guard let self else { return }
      read.figures.finish(took: self.session.loop.clock.now - startedAt)
      if result.wasNeverSent { read.calls -= 1 }
      guard self.session.world == world else {
        return self.session.answeredInOldWorld(world, completion) { self.fetchFollowing(key, completion: completion) }
      }
      completion(self.singleReadAnswer(result, key, read))
    }
  }

  /// The HTTP request of `read` for `id`: its path cut once when it can be, else
  /// filled as any endpoint's.
  func singleReadRequest(_ read: StateRead, kind: String, id: String) -> HTTPRequest {
    guard let path = read.path, !session.fillsValues else {
      return session.request(read.state.endpoint, kind: kind, id: id)
    }
    return session.request(
      read.state.endpoint, url: path.url(prefix: session.baseURL, id: id), headers: read.headers)
  }
}
