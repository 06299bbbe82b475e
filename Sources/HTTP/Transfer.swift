import CCurl
import Posix

/// One libcurl easy handle and the request on it. Pooled by `CurlMulti` with its handle
/// and reset for each request: one object per request was an allocation and a free, and
/// two options a request to point libcurl's callbacks at it.
final class Transfer {
  let handle: UnsafeMutableRawPointer
  /// The handle's (see `prepare`): libcurl writes why a transfer failed there.
  let errorBuffer: UnsafeMutablePointer<CChar>
  /// Where the multi handle keeps it while a request is under way (the handle's CURLOPT_PRIVATE).
  let slot: Int
  private let maxBodyBytes: Int
  /// The per-request options the handle was last given (see `configure`).
  private var applied: Options?
  /// The request under way; an empty one between requests.
  private(set) var request = HTTPRequest(method: "", url: "")
  /// The client's slot for the request under way, which its report names.
  private(set) var order = 0
  private var headerList: UnsafeMutablePointer<curl_slist>?
  private var headerBytes: [UInt8] = []
  private(set) var body: [UInt8] = []
  private(set) var exceededBodyLimit = false

  /// Owns `handle` and `errorBuffer` from now on.
  init(handle: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>, slot: Int, maxBodyBytes: Int) {
    self.handle = handle
    self.errorBuffer = errorBuffer
    self.slot = slot
    self.maxBodyBytes = maxBodyBytes
  }

  deinit {
    nm_easy_cleanup(handle)
    nm_slist_free_all(headerList)
    errorBuffer.deallocate()
  }

  /// Takes `request` on: `configure` sets its options next.
  func begin(_ request: HTTPRequest, for order: Int) {
    self.request = request
    self.order = order
    exceededBodyLimit = false
    errorBuffer.pointee = 0  // no message of the handle's last transfer stays
  }

  /// Forgets the request once it is answered or refused: its strings, the answer's buffers (the response holds its own) and the header list, which the
  /// handle no longer points at, so nothing can reach it.
  func end() {
    request = HTTPRequest(method: "", url: "")
    _ = nm_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, nil)
    nm_slist_free_all(headerList)
    headerList = nil
    headerBytes = []
    body = []
  }

  /// A buffer as large as libcurl's messages, for `prepare`; freed after its handle.
  static func makeErrorBuffer() -> UnsafeMutablePointer<CChar> {
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    return buffer
  }

  /// Sets the options every request shares, once per handle: the pool keeps its
  /// handles as configured (no `curl_easy_reset`), so `configure` sets only what differs
  /// between requests. nil when libcurl took them all.
  func prepare() -> CURLcode? {
    let easy = handle
    var failed: CURLcode = CURLE_OK
    func check(_ code: CURLcode) { if code != CURLE_OK && failed == CURLE_OK { failed = code } }
    // One buffer per handle, for its whole life: one per transfer was an allocation,
    // a free and two options a request.
    check(nm_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
    // The proxy is the client's choice (`ProxySettings`), set per request: libcurl must
    // not pick one of its own from the environment (it otherwise reads five variables
    // a request, each a scan of the whole environment).
    check(nm_easy_setopt_string(easy, CURLOPT_PROXY, ""))
    check(nm_easy_setopt_string(easy, CURLOPT_NOPROXY, ""))
    check(nm_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
    // Only what an API speaks: no file://, no redirects to another scheme.
    check(nm_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
    // The path goes out as built: libcurl would otherwise resolve "/./" and "/../"
    // (RFC 3986 §5.2.4) and call another resource than the one the caller checked.
    check(nm_easy_setopt_long(easy, CURLOPT_PATH_AS_IS, 1))
    check(nm_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS))
    check(nm_easy_setopt_long(easy, CURLOPT_TCP_NODELAY, 1))
    // The callbacks' context is this object for the handle's whole life (the client
    // keeps it as long as the handle).
    let context = Unmanaged.passUnretained(self).toOpaque()
    check(nm_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
    check(nm_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context))
    check(
      nm_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
        let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
        return transfer.received(UnsafeRawBufferPointer(start: data, count: size * count))
      })
    check(
      nm_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
        let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
        transfer.receivedHeader(UnsafeRawBufferPointer(start: data, count: size * count))
        return size * count
      })
    return failed == CURLE_OK ? nil : failed
  }

  /// The per-request options a handle was last given that most requests repeat: a
  /// request sets only those that differ instead of all of them each time (libcurl
  /// keeps what it was given until told otherwise).
  struct Options: Equatable {
    var timeoutMs = 0
    var connectTimeoutMs = 0
    var askCompression = false
    /// HTTPGET 1 and no CUSTOMREQUEST: a plain GET.
    var plainGET = false
    /// CURLOPT_PROXY: "" for none (what `prepare` set).
    var proxy = ""
  }

  /// Sets the options of this request on a handle `prepare` set up: every option a
  /// request may set is set by each one, or was set to the same value by the handle's
  /// last (`applied`: nil when unknown), so nothing of the handle's last request stays.
  /// nil when libcurl took them all.
  func configure(timeoutsMs: TimeoutsMs, proxy: String) -> HTTPError? {
    let easy = handle
    var failed: CURLcode = CURLE_OK
    func check(_ code: CURLcode) { if code != CURLE_OK && failed == CURLE_OK { failed = code } }
    let last = applied
    var options = Options()

    // Through `withCString`: a `String` passed as a C string is copied into a new
    // array first, where `withCString` lends a native string's own bytes.
    check(request.url.withCString { nm_easy_setopt_string(easy, CURLOPT_URL, $0) })
    // Compression saves nothing on loopback, and asking for it costs libcurl a header
    // built per request.
    options.askCompression = !Transfer.isLoopback(request.url)
    if last?.askCompression != options.askCompression {
      check(nm_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, options.askCompression ? "" : nil))
    }
    options.proxy = proxy
    if last?.proxy != proxy { check(nm_easy_setopt_string(easy, CURLOPT_PROXY, proxy)) }
    options.timeoutMs = timeoutsMs.total
    options.connectTimeoutMs = timeoutsMs.connect
    if last?.timeoutMs != options.timeoutMs { check(nm_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutsMs.total)) }
    if last?.connectTimeoutMs != options.connectTimeoutMs {
      check(nm_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeoutsMs.connect))
    }

    switch (request.method, request.body) {
    case ("GET", nil):
      options.plainGET = true
      if last?.plainGET != true {
        check(nm_easy_setopt_long(easy, CURLOPT_HTTPGET, 1))
        check(nm_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, nil))
      }
    case (let method, nil) where method != "POST" && method != "PUT" && method != "PATCH":
      check(nm_easy_setopt_long(easy, CURLOPT_HTTPGET, 1))
      check(nm_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method))
    case (let method, let body):
      // COPYPOSTFIELDS: libcurl keeps its own copy, so no Swift buffer must outlive
      // this call. The size goes first, so bodies with zero bytes in them work.
      let bytes = body ?? []
      check(nm_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count)))
      var terminated = bytes
      terminated.append(0)  // an empty body still needs a valid pointer
      check(
        terminated.withUnsafeMutableBytes { buffer in
          nm_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, buffer.baseAddress)
        })
      check(nm_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method == "POST" ? nil : method))
    }
    // Unknown after a refusal: the next request sets them all.
    applied = failed == CURLE_OK ? options : nil

    // "Expect:" stops libcurl waiting for a 100-continue before bodies over 1 KiB.
    var list: UnsafeMutablePointer<curl_slist>? = request.body == nil ? nil : nm_slist_append(nil, "Expect:")
    for header in request.headers {
      list = nm_slist_append(list, "\(header.name): \(header.value)")
    }
    headerList = list
    check(nm_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList))

    guard failed == CURLE_OK else {
      return HTTPError(.invalidRequest, "\(request.summary): \(String(cString: nm_easy_strerror(failed)))")
    }
    return nil
  }

  /// Whether `url` names this machine by its loopback address or `localhost`. Reads
  /// bytes: it runs for every request, and `String` prefix tests cost more than the
  /// header it saves.
  static func isLoopback(_ url: String) -> Bool {
    var url = url
    return url.withUTF8 { bytes in
      func has(_ prefix: StaticString, at offset: Int) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard offset + count <= bytes.count else { return false }
        let start = prefix.utf8Start
        for index in 0..<count where bytes[offset + index] != start[index] { return false }
        return true
      }
      let host = has("http://", at: 0) ? 7 : has("https://", at: 0) ? 8 : -1
      guard host > 0 else { return false }
      let name = host + (has("localhost", at: host) ? 9 : 0)
      if name > host && (name == bytes.count || bytes[name] == UInt8(ascii: ":") || bytes[name] == UInt8(ascii: "/")) {
        return true
      }
      return has("127.", at: host) || has("[::1]", at: host)
    }
  }

  private func received(_ bytes: UnsafeRawBufferPointer) -> Int {
    guard body.count + bytes.count <= maxBodyBytes else {
      exceededBodyLimit = true
      return 0  // makes libcurl stop the transfer with CURLE_WRITE_ERROR
    }
    body.append(contentsOf: bytes)
    return bytes.count
  }

  /// Keeps each header line's bytes; they are split into names and values only when
  /// the transfer completes (most answers are read for their body alone).
  private func receivedHeader(_ bytes: UnsafeRawBufferPointer) {
    if bytes.count > 5, bytes[0] == UInt8(ascii: "H"), bytes[4] == UInt8(ascii: "/") {
      // A new status line: an interim 1xx answer or a redirect came before.
      headerBytes.removeAll(keepingCapacity: true)
      return
    }
    // Room for a usual header block at once: grown line by line, it was copied
    // into a new buffer about every other line.
    if headerBytes.capacity == 0 { headerBytes.reserveCapacity(256) }
    headerBytes.append(contentsOf: bytes)
  }

  /// The outcome once libcurl is done with the handle.
  func result(code: CURLcode) -> Result<HTTPResponse, HTTPError> {
    guard code == CURLE_OK else {
      let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : String(cString: nm_easy_strerror(code))
      let message = "\(request.summary): \(detail)"
      switch code {
      case CURLE_OPERATION_TIMEDOUT: return .failure(HTTPError(.timedOut, message))
      case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
        return .failure(HTTPError(.couldNotConnect, message))
      case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE, CURLE_HTTP2,
        CURLE_HTTP2_STREAM, CURLE_WEIRD_SERVER_REPLY:
        return .failure(HTTPError(.connectionLost, message))
      case CURLE_WRITE_ERROR where exceededBodyLimit:
        return .failure(HTTPError(.tooLarge, "\(request.summary): answer larger than \(maxBodyBytes) bytes"))
      case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
        return .failure(HTTPError(.invalidRequest, message))
      default: return .failure(HTTPError(.other, message))
      }
    }
    let status = nm_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE)
    return .success(HTTPResponse(status: status, headerBytes: headerBytes, body: body))
  }
}
