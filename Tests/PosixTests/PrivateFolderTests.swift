import Glibc
import Posix
import Testing

/// The refusal's message, or nil when `path` passes.
private func refusal(_ path: String) -> String? {
  do {
    try PrivateFolder.check(path, role: "socket folder", elsewhere: "--socket=PATH")
    return nil
  } catch {
    return error.description
  }
}

/// A fresh folder `name` (mode `mode`, set after mkdir so the umask does not count)
/// inside a fresh private folder.
private func folder(_ name: String = "f", mode: mode_t = 0o700) -> (parent: String, path: String) {
  let parent = temporaryFolder()
  let path = parent + "/" + name
  mkdir(path, 0o700)
  chmod(path, mode)
  return (parent, path)
}

private let nobody: uid_t = 65534

@Suite struct PrivateFolderTests {
  @Test func ourOwn0700FolderPasses() {
    #expect(refusal(folder().path) == nil)
  }

  @Test func othersMayReadButNotWrite() {
    // 0755 and 0750: others see the socket's name, but the socket itself is 0600.
    #expect(refusal(folder(mode: 0o755).path) == nil)
    #expect(refusal(folder(mode: 0o750).path) == nil)
  }

  @Test(arguments: [(0o775, "its group"), (0o777, "its group and other users"), (0o703, "other users")])
  func aFolderOthersCanWriteIsRefused(mode: Int, who: String) throws {
    let path = folder(mode: mode_t(mode)).path
    let message = try #require(refusal(path))
    #expect(message.contains("can be written by \(who)"), "\(message)")
    #expect(message.contains("chmod 700 \(path)"), "\(message)")
    #expect(try FileSystem.permissions(path) == mode_t(mode), "the mode is never changed")
  }

  @Test(.enabled(if: getuid() == 0, "needs root to give a folder to another user"))
  func aFolderOfAnotherUserIsRefused() throws {
    let path = folder().path
    chown(path, nobody, nobody)
    let message = try #require(refusal(path))
    #expect(message.contains("\(path) belongs to uid 65534, not to this user (uid 0)"), "\(message)")
  }

  @Test func aSymbolicLinkIsRefusedEvenToOurOwnFolder() throws {
    let (parent, target) = folder()
    symlink(target, parent + "/link")
    let message = try #require(refusal(parent + "/link"))
    #expect(message.contains("is a symbolic link"), "\(message)")
  }

  @Test func aSharedStickyFolderIsNotOurs() throws {
    let message = try #require(refusal("/tmp"))
    #expect(message.contains("/tmp is shared (mode 1777)"), "\(message)")
    #expect(!message.contains("chmod"), "chmod-ing /tmp is never the advice")
  }

  @Test func aParentOthersCanWriteWithoutTheStickyBitIsRefused() throws {
    let (parent, path) = folder()
    chmod(parent, 0o777)
    let message = try #require(refusal(path))
    #expect(message.contains("\(parent), which holds the socket folder \(path), can be written by"), "\(message)")
    #expect(message.contains("no sticky bit"), "\(message)")
    chmod(parent, 0o1777)
    #expect(refusal(path) == nil, "with the sticky bit nobody else can rename our folder")
  }

  @Test(.enabled(if: getuid() == 0, "needs root to give a folder to another user"))
  func aParentOfAnotherUserIsRefused() throws {
    let (parent, path) = folder()
    chown(parent, nobody, nobody)
    let message = try #require(refusal(path))
    #expect(message.contains("\(parent), which holds the socket folder \(path), belongs to uid 65534"), "\(message)")
  }

  @Test func listenRefusesAFolderOthersCanWriteAndMakesNoSocket() throws {
    let path = folder(mode: 0o777).path + "/s.sock"
    do {
      let fd = try UnixSocket.listen(path: path)
      fd.close()
      Issue.record("listened in a folder anyone can write")
    } catch {
      guard case .notPrivate = error else {
        Issue.record("expected notPrivate, got \(error)")
        return
      }
      #expect(error.description.hasPrefix("refusing to listen on \(path): "), "\(error)")
    }
    #expect(!FileSystem.exists(path))
  }
}
