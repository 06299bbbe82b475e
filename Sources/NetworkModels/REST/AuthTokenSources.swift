import Posix

/// Where the auth token comes from at start: the first of `auth.tokenCredential` (a
/// systemd credential), `auth.tokenFile` and `auth.tokenEnv` that is there. A credential
/// or a file keeps the token out of unit files and out of the environment every process
/// the user starts inherits. One that is there but wrong (a file others can read, a
/// control byte in the token) stops the start: a refused token never falls through to
/// the next source, which would hide the mistake.
public enum AuthTokenSources {
  public enum Outcome: Equatable {
    /// The token, and where it came from (for the log; never the token itself).
    case token(String, from: String)
    /// None is there; the notes say what was looked for (a credential not passed, a
    /// missing file), for a warning. The server starts without a token.
    case none(notes: [String])
    /// Why the start stops (exit 2): names the source, never the content.
    case refused(String)
  }

  /// `environment` is where `$CREDENTIALS_DIRECTORY`, `$HOME` (for `~/`) and `tokenEnv`
  /// are looked up; `folder` is the configuration's, which a relative `tokenFile` is in.
  public static func resolve(
    _ auth: RESTConfiguration.Auth?, folder: String?, environment: (String) -> String?
  ) -> Outcome {
    guard let auth else { return .none(notes: []) }
    var notes: [String] = []
    if let name = auth.tokenCredential {
      if let directory = environment("CREDENTIALS_DIRECTORY"), !directory.isEmpty {
        // systemd sets an absolute one; a relative one would be read, unchecked for
        // privacy as systemd's own folder is, from whatever folder the server started in.
        guard directory.hasPrefix("/") else {
          return .refused("$CREDENTIALS_DIRECTORY \(directory) is not an absolute path (systemd sets an absolute one)")
        }
        let path = (directory.hasSuffix("/") ? directory : directory + "/") + name
        switch read(path, role: "the credential \(name) (auth.tokenCredential)", mustBePrivate: false) {
        case .token(let token, _): return .token(token, from: "the credential \(name)")
        case .none(let why): notes += why
        case .refused(let why): return .refused(why)
        }
      } else {
        notes.append(
          "auth.tokenCredential \(name): no $CREDENTIALS_DIRECTORY (not started by systemd with LoadCredential=)")
      }
    }
    if let written = auth.tokenFile {
      guard let path = expand(written, folder: folder, environment: environment) else {
        return .refused("auth.tokenFile \(written): ~/ needs $HOME")
      }
      switch read(path, role: "auth.tokenFile", mustBePrivate: true) {
      case .token(let token, _): return .token(token, from: path)
      case .none(let why): notes += why
      case .refused(let why): return .refused(why)
      }
    }
    if let name = auth.tokenEnvironmentVariable {
      if let token = environment(name), !token.isEmpty {
        if let problem = AuthToken.problem(token) { return .refused("the token in $\(name) " + problem) }
        return .token(token, from: "$\(name)")
      }
      notes.append("auth.tokenEnv: $\(name) is not set")
    }
    return .none(notes: notes)
  }

  /// The token in a file: one trailing newline (`\n` or `\r\n`, what an editor or
  /// `echo` leaves) is not part of it; anything else `AuthToken.problem` refuses is.
  static func read(_ path: String, role: String, mustBePrivate: Bool) -> Outcome {
    var bytes: [UInt8]
    do {
      bytes = try SecretFile.read(path, role: role, mustBePrivate: mustBePrivate)
    } catch {
      switch error {
      case .missing(let why): return .none(notes: [why])
      case .refused(let why): return .refused(why)
      }
    }
    if bytes.last == UInt8(ascii: "\n") {
      bytes.removeLast()
      if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
    }
    guard !bytes.isEmpty else { return .refused("\(role) \(path) is empty") }
    // Decoding repairs bytes that are not UTF-8 into U+FFFD, which is no control
    // character: a token is refused for them as for controls.
    guard let token = String(validating: bytes, as: UTF8.self) else {
      return .refused("the token in \(role) \(path) is not UTF-8 text")
    }
    if let problem = AuthToken.problem(token) { return .refused("the token in \(role) \(path) " + problem) }
    return .token(token, from: path)
  }

  /// `~/…` under `$HOME` (when it is an absolute path, else the password database's
  /// home: a relative one would read a token from the folder the server started in), a
  /// relative path under `folder`, an absolute one as it is.
  public static func expand(_ path: String, folder: String?, environment: (String) -> String?) -> String? {
    if path.utf8.first == UInt8(ascii: "~") {
      let named = environment("HOME").flatMap { $0.hasPrefix("/") ? $0 : nil }
      guard let home = named ?? Process.passwordDatabaseHome(), home.hasPrefix("/") else { return nil }
      return home + String(decoding: path.utf8.dropFirst(), as: UTF8.self)
    }
    if path.utf8.first == UInt8(ascii: "/") { return path }
    guard let folder else { return path }
    return (folder.hasSuffix("/") ? folder : folder + "/") + path
  }
}
