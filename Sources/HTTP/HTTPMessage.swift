/// One HTTP request, as the REST backend builds it from an endpoint description.
public struct HTTPRequest: Sendable, Equatable {
  public var method: String
  /// Absolute, already percent-encoded.
  public var url: String
  /// Sent in this order; a value of a header named in `secretHeaders` is never logged.
  public var headers: [(name: String, value: String)]
  public var body: [UInt8]?
  /// The whole transfer, connection included; zero means no limit.
  public var timeout: Duration
  public var connectTimeout: Duration
  /// Whether a header holds the auth token: such a request never goes over plain
  /// http:// through a proxy that is not loopback (`ProxySettings`).
  public var carriesCredentials: Bool
  /// The longest a rate limit's hold (`HTTPClient.hold`) may keep it waiting: one
  /// that would keep it longer gives it up, unsent (`.heldTooLong`), so a caller who
  /// waits for it hears at once. Nil: it waits as long as the hold.
  public var maxHoldWait: Duration?

  public init(
    method: String, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil,
    timeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(3), carriesCredentials: Bool = false,
    maxHoldWait: Duration? = nil
  ) {
    self.method = method
    self.url = url
    self.headers = headers
    self.body = body
    self.timeout = timeout
    self.connectTimeout = connectTimeout
    self.carriesCredentials = carriesCredentials
    self.maxHoldWait = maxHoldWait
  }

  public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
    a.method == b.method && a.url == b.url && a.body == b.body && a.timeout == b.timeout
      && a.connectTimeout == b.connectTimeout && a.carriesCredentials == b.carriesCredentials
      && a.maxHoldWait == b.maxHoldWait && a.headers.elementsEqual(b.headers, by: { $0 == $1 })
  }

  /// `METHOD url`, safe to log: headers (where tokens live) and bodies are left out.
  public var summary: String { "\(method) \(url)" }
}

/// A complete answer, whatever its status.
public struct HTTPResponse: Sendable {
  public var status: Int
  /// The header block as received (`Name: value` lines); split only when asked,
  /// since most answers are read for their body alone.
  public var headerBytes: [UInt8]
  public var body: [UInt8]

  public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
    self.status = status
    self.headerBytes = Array(headers.map { "\($0.name): \($0.value)\r\n" }.joined().utf8)
    self.body = body
  }

  init(status: Int, headerBytes: [UInt8], body: [UInt8]) {
    self.status = status
    self.headerBytes = headerBytes
    self.body = body
  }

  /// Names as the server sent them, in order.
  public var headers: [(name: String, value: String)] {
    var headers: [(name: String, value: String)] = []
    for line in headerBytes.split(separator: UInt8(ascii: "\n")) {
      guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
      headers.append(
        (
          String(decoding: line[..<colon], as: UTF8.self),
          String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces
        ))
    }
    return headers
  }

  /// The last value of header `name`, compared without case.
  public func header(_ name: String) -> String? {
    let wanted = name.lowercased()
    return headers.last(where: { $0.name.lowercased() == wanted })?.value
  }

  /// Retry-After, in seconds or as an HTTP-date (RFC 9110 §10.2.3), at most an hour
  /// (a longer wait is the backoff's to judge).
  public var retryAfter: Duration? { retryAfter(now: ResetTime.wallClockNow()) }

  /// `retryAfter` with the wall clock at `now` (seconds since 1970), for a date.
  public func retryAfter(now: Double) -> Duration? {
    guard let value = header("Retry-After"), let delay = ResetTime.delay(value, now: now) else { return nil }
    return min(delay, .seconds(3600))
  }
}

/// Why no response came: the transfer failed before a complete answer arrived.
public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
  public enum Kind: Sendable, Equatable {
    case timedOut
    case couldNotConnect
    /// Reset, dropped, or a malformed answer.
    case connectionLost
    case tooLarge
    /// A bad URL or an option libcurl refused: retrying will not help.
    case invalidRequest
    /// Given up by `HTTPClient.cancel` before it went out: nothing was sent.
    case cancelled
    /// Given up while it waited: a rate limit's hold would have kept it longer than
    /// its `maxHoldWait`. Nothing was sent.
    case heldTooLong
    case other
  }

  public var kind: Kind
  /// libcurl's words, with the request's method and URL; never a header value.
  public var message: String

  public init(_ kind: Kind, _ message: String) {
    self.kind = kind
    self.message = message
  }

  public var description: String { message }
}

extension String {
  /// Without leading and trailing spaces, tabs and line ends (scalars, because "\r\n"
  /// is one Character).
  var trimmingSpaces: String {
    var scalars = Substring(self).unicodeScalars
    let space: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
    while let first = scalars.first, space(first) { scalars.removeFirst() }
    while let last = scalars.last, space(last) { scalars.removeLast() }
    return String(scalars)
  }
}
