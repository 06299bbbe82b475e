import Posix
import Testing

@testable import NetworkModels

/// Where the start's token comes from (issue 27): the first source that is there; one
/// that is there but refused stops the start and never falls through to the next.
@Suite struct AuthTokenSourcesTests {
  func auth(credential: String? = nil, file: String? = nil, variable: String? = nil) -> RESTConfiguration.Auth {
    RESTConfiguration.Auth(
      header: "Authorization", scheme: "Bearer", tokenEnvironmentVariable: variable, tokenFile: file,
      tokenCredential: credential)
  }

  func write(_ text: String, to path: String, mode: UInt32) throws {
    let fd = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate], permissions: mode)
    try fd.writeAll(Array(text.utf8))
    fd.close()
  }

  @Test func theFirstSourceThatIsThereGivesTheToken() throws {
    let folder = try FileSystem.makeTemporaryFolder()
    defer { FileSystem.removeTree(folder) }
    try FileSystem.makeFolders(folder + "/creds")
    try write("from-credential\n", to: folder + "/creds/api", mode: 0o400)
    try write("from-file\r\n", to: folder + "/token", mode: 0o600)
    let variables = ["CREDENTIALS_DIRECTORY": folder + "/creds", "API_TOKEN": "from-variable", "HOME": folder]
    let all = auth(credential: "api", file: "token", variable: "API_TOKEN")
    #expect(
      AuthTokenSources.resolve(all, folder: folder, environment: { variables[$0] })
        == .token("from-credential", from: "the credential api"))
    // No $CREDENTIALS_DIRECTORY: the file (relative to the configuration's folder), newline dropped.
    #expect(
      AuthTokenSources.resolve(
        all, folder: folder, environment: { $0 == "CREDENTIALS_DIRECTORY" ? nil : variables[$0] })
        == .token("from-file", from: folder + "/token"))
    let home = auth(file: "~/token", variable: "API_TOKEN")
    #expect(
      AuthTokenSources.resolve(home, folder: "/elsewhere", environment: { variables[$0] })
        == .token("from-file", from: folder + "/token"))
    let missing = auth(credential: "other", file: "nope", variable: "API_TOKEN")
    #expect(
      AuthTokenSources.resolve(missing, folder: folder, environment: { variables[$0] })
        == .token("from-variable", from: "$API_TOKEN"))
    guard case .none(let notes) = AuthTokenSources.resolve(missing, folder: folder, environment: { _ in nil }) else {
      Issue.record("no source is there")
      return
    }
    #expect(notes.count == 3)
  }

  @Test func aRefusedSourceDoesNotFallThrough() throws {
    let folder = try FileSystem.makeTemporaryFolder()
    defer { FileSystem.removeTree(folder) }
    try write("zq7-token", to: folder + "/token", mode: 0o644)
    let variables = ["API_TOKEN": "from-variable"]
    let outcome = AuthTokenSources.resolve(
      auth(file: folder + "/token", variable: "API_TOKEN"), folder: nil, environment: { variables[$0] })
    guard case .refused(let why) = outcome else {
      Issue.record("a token file others can read must be refused, not \(outcome)")
      return
    }
    #expect(why.contains("mode 644") && !why.contains("zq7"))
    try write("zq7\u{1B}token", to: folder + "/token2", mode: 0o600)
    guard
      case .refused(let control) = AuthTokenSources.resolve(
        auth(file: folder + "/token2"), folder: nil, environment: { _ in nil })
    else {
      Issue.record("a control byte must be refused")
      return
    }
    #expect(control.contains("control characters") && !control.contains("zq7"))
  }

  /// `~/` is `$HOME` only when that is an absolute path: a relative one would read the
  /// token from whatever folder the server started in.
  @Test func aTildeIsAnAbsoluteHomeOrThePasswordDatabasesOne() {
    #expect(AuthTokenSources.expand("~/t", folder: "/f", environment: { ["HOME": "/h"][$0] }) == "/h/t")
    let fromDatabase = AuthTokenSources.expand("~/t", folder: "/f", environment: { ["HOME": "rel"][$0] })
    #expect(fromDatabase == Process.passwordDatabaseHome().map { $0 + "/t" })
    #expect(fromDatabase?.hasPrefix("rel") != true)
    #expect(AuthTokenSources.expand("t", folder: "/f", environment: { _ in nil }) == "/f/t")
  }

  @Test func aRelativeCredentialsDirectoryIsRefusedNotReadFromTheCurrentFolder() {
    let outcome = AuthTokenSources.resolve(
      auth(credential: "api"), folder: "/f", environment: { ["CREDENTIALS_DIRECTORY": "creds"][$0] })
    guard case .refused(let why) = outcome else {
      Issue.record("not refused: \(outcome)")
      return
    }
    #expect(why.contains("$CREDENTIALS_DIRECTORY creds is not an absolute path"))
  }
}
