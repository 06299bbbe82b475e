import EventLoop
import HTTP
import Testing

@testable import NetworkModels

/// A single state read's request is built from its path cut once (RESTFollows+SingleRead):
/// it must be byte for byte what filling the path with `Template.fill` gives, for every
/// shape of path and id.
@Suite struct RESTSingleReadTests {
  static let paths = [
    "/thing/{id}", "/thing/{id}/follow", "/{kind}/{id}", "/t/{id*}", "/t/{id}/{id*}/{kind}", "/no/placeholder",
    "/lit/{{id}}/{id}", "/braces}}/{id}{{", "/open/{id", "/close}/{id}", "/é/{id}", "/{id}{id}", "/",
  ]
  static let ids = ["a1", "banksy", "a b", "a/b", "../x", "é€😀", "%2F", "?q=1#f", "~._-", "{id}", "*", "x/y/z"]

  static func backend(path: String, kind: String = "ki-nd") throws -> RESTBackend {
    let text = """
      {"environments": {"test": "http://127.0.0.1:1/base"}, "headers": {"X-A": "1"},
       "kinds": {"\(kind)": {"follow": {"method": "PUT", "path": "/f"}, "unfollow": {"method": "DELETE", "path": "/f"},
         "state": {"method": "GET", "path": \(quoted(path)), "headers": {"X-B": "2"}}}}}
      """
    return RESTBackend(configuration: try RESTConfiguration.parse(text), loop: try EventLoop())
  }

  static func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"", "\\": out += "\\" + String(scalar)
      case "\u{0}"..."\u{1F}": out += "\\u00" + (scalar.value < 16 ? "0" : "1") + String(scalar.value % 16, radix: 16)
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }

  @Test(arguments: paths)
  func theCutPathFillsAsTemplateFillDoes(path: String) throws {
    let backend = try Self.backend(path: path)
    let read = try #require(backend.follows.stateRead("ki-nd"))
    #expect(read.path != nil, "a path alone is cut once")
    for id in Self.ids {
      let built = backend.follows.singleReadRequest(read, kind: "ki-nd", id: id)
      let filled = backend.session.request(read.state.endpoint, kind: "ki-nd", id: id)
      #expect(built == filled, "\(path) with \(id)")
      #expect(
        built.url == "http://127.0.0.1:1/base"
          + Template.fill(path, ["kind": "ki-nd", "id": id]) {
            Template.percentEncode($0)
          })
    }
  }

  /// The markers the path is cut at are bytes 0 and 1: a path holding one is filled as
  /// any endpoint's.
  @Test func aPathWithAMarkerByteIsNotCut() throws {
    let backend = try Self.backend(path: "/a\u{1}b/{id}")
    let read = try #require(backend.follows.stateRead("ki-nd"))
    #expect(read.path == nil)
    #expect(backend.follows.singleReadRequest(read, kind: "ki-nd", id: "x").url == "http://127.0.0.1:1/base/a\u{1}b/x")
  }
}
