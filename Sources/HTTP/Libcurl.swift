import CCurl
import Posix

/// libcurl could not be loaded: no `HTTPClient` can be made, so no REST backend.
/// The binary does not link libcurl (see Sources/CCurl/include/CCurl.h): the local
/// backend starts without it, and the REST backend finds out here.
public struct LibcurlUnavailable: Error, Sendable, CustomStringConvertible {
  public enum Reason: Sendable, Equatable {
    /// dlopen failed, with its words.
    case notFound(String)
    /// The library lacks this function: not libcurl, or one too old.
    case missingFunction(String)
    /// `curl_global_init` answered this code.
    case initialisationFailed(Int)
  }

  /// What was opened: `libcurl.so.4`, or `NETMODEL_LIBCURL`'s value.
  public let library: String
  public let reason: Reason

  public var description: String {
    switch reason {
    case .notFound(let detail):
      return "\(library) not found: install libcurl4 (Debian) (\(detail))"
    case .missingFunction(let name):
      return "\(library) has no \(name): install libcurl4 (Debian), version 7.85 or later"
    case .initialisationFailed(let code):
      return "\(library): curl_global_init failed (CURLcode \(code))"
    }
  }
}

/// The library `HTTPClient` opens. `NETMODEL_LIBCURL` names another (a file name the
/// dynamic loader looks up, or a path): for tests of a machine without libcurl, and
/// for one whose libcurl has another name. Whoever sets a process's environment can
/// make it load a library anyway (LD_PRELOAD), so this gives nobody more than that.
private let libcurlName: String = {
  guard let name = Process.environment("NETMODEL_LIBCURL"), !name.isEmpty else { return "libcurl.so.4" }
  return name
}()

/// Loaded, and `curl_global_init` called, once, on first use (Swift initialises a global
/// once, thread-safely): on the loop's thread when the first client is made, before
/// libcurl could see another thread.
private let libcurl: Result<Void, LibcurlUnavailable> = {
  var why = [CChar](repeating: 0, count: 512)
  let loaded = nm_curl_load(libcurlName, &why, why.count)
  let detail = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  switch loaded {
  case 0: break
  case -2: return .failure(LibcurlUnavailable(library: libcurlName, reason: .missingFunction(detail)))
  default: return .failure(LibcurlUnavailable(library: libcurlName, reason: .notFound(detail)))
  }
  let code = nm_global_init(Int(CURL_GLOBAL_DEFAULT))
  guard code == CURLE_OK else {
    return .failure(LibcurlUnavailable(library: libcurlName, reason: .initialisationFailed(Int(code.rawValue))))
  }
  return .success(())
}()

extension HTTPClient {
  /// Loads libcurl unless it is loaded, or says why it cannot be. Call it before making
  /// the first client where a missing libcurl must be an error rather than a stop
  /// (`serve --backend rest`); the local backend never calls it, so never loads libcurl.
  public static func loadLibcurl() throws(LibcurlUnavailable) {
    if case .failure(let error) = libcurl { throw error }
  }
}
