import Glibc
import Posix
import Testing

func temporaryFolder() -> String {
  var template = Array("/tmp/netmodel-test-XXXXXX".utf8CString)
  let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
  return path
}

func mode(_ path: String) -> mode_t {
  var info = stat()
  stat(path, &info)
  return info.st_mode & 0o777
}

@Suite struct UnixSocketTests {
  @Test func theFolderIs0700AndTheSocket0600() throws {
    let path = temporaryFolder() + "/run/netmodel/netmodel.sock"
    let fd = try UnixSocket.listen(path: path)
    defer { fd.close() }
    #expect(mode(path) == 0o600)
    #expect(mode(String(path[..<path.lastIndex(of: "/")!])) == 0o700)
  }

  @Test func anExistingFolderKeepsItsMode() throws {
    let folder = temporaryFolder()
    chmod(folder, 0o755)
    let fd = try UnixSocket.listen(path: folder + "/shared.sock")
    defer { fd.close() }
    #expect(mode(folder) == 0o755, "a folder netmodel did not create is not netmodel's to change")
    #expect(mode(folder + "/shared.sock") == 0o600)
  }

  @Test func aStaleSocketFileIsReplaced() throws {
    let path = temporaryFolder() + "/stale.sock"
    let dead = try UnixSocket.listen(path: path)
    dead.close()  // the file stays, as when a server is killed
    #expect(access(path, F_OK) == 0)
    #expect(!UnixSocket.isAnswering(path: path))
    let fresh = try UnixSocket.listen(path: path)
    defer { fresh.close() }
    #expect(UnixSocket.isAnswering(path: path))
  }

  @Test func aLiveServersSocketIsNeverTakenOver() throws {
    let path = temporaryFolder() + "/live.sock"
    let live = try UnixSocket.listen(path: path)
    defer { live.close() }
    do {
      let second = try UnixSocket.listen(path: path)
      second.close()
      Issue.record("a second listener took over a live socket")
    } catch {
      guard case .inUse = error else {
        Issue.record("expected inUse, got \(error)")
        return
      }
      #expect(error.description.contains(path))
    }
    #expect(UnixSocket.isAnswering(path: path))
  }

  @Test func peerCredentialsNameOurOwnUser() throws {
    let path = temporaryFolder() + "/cred.sock"
    let listener = try UnixSocket.listen(path: path)
    defer { listener.close() }
    let client = try UnixSocket.connect(path: path)
    defer { client.close() }
    let accepted = try #require(try UnixSocket.accept(listener))
    defer { accepted.close() }
    #expect(try UnixSocket.peerUID(accepted) == UserID(rawValue: getuid()))
    #expect(UnixSocket.currentUID().rawValue == getuid())
  }

  @Test func aPathTooLongForSunPathIsAnErrorNotATruncation() throws {
    let path = temporaryFolder() + "/" + String(repeating: "x", count: 120) + ".sock"
    #expect(throws: UnixSocket.ListenError.self) { try UnixSocket.listen(path: path) }
  }
}
