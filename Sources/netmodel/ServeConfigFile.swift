import JSON
import Posix

/// netmodel.json: `serve` options by their long names, as on the command line
/// (schema/serve-config.schema.json). `{"backend": "rest", "config": "~/x.json",
/// "max-entities": 50000}`: text options take a JSON string, counts a JSON integer,
/// flags `true` or `false`. A path's `~/` is the home folder and a relative path is
/// relative to the file's folder, so the file means the same from any working folder.
/// A member that is no option, or a value of the wrong type, is refused with its
/// JSON Pointer, as the REST configuration's fields are.
enum ServeConfigFile {
  struct Location {
    let path: String
    /// Named by `--config-file`: then it must be there.
    let explicit: Bool
    var found = false

    /// `--config-file`'s path, else `$XDG_CONFIG_HOME/netmodel/netmodel.json` (an unset,
    /// empty or relative `$XDG_CONFIG_HOME` is `~/.config`, as the XDG spec says).
    static func resolve(named: String?) throws(ServeOptions.UsageError) -> Location {
      if let named {
        guard !named.isEmpty else { throw .init(message: "--config-file needs a path") }
        return Location(path: named, explicit: true)
      }
      if let config = Process.environment("XDG_CONFIG_HOME"), config.utf8.first == UInt8(ascii: "/") {
        return Location(path: config + "/netmodel/netmodel.json", explicit: false)
      }
      guard let home = ServeConfigFile.home() else {
        throw .init(
          message: "neither $XDG_CONFIG_HOME nor $HOME says where netmodel.json is: give --config-file FILE")
      }
      return Location(path: home + "/.config/netmodel/netmodel.json", explicit: false)
    }
  }

  /// `$HOME`, else the password database's.
  static func home() -> String? {
    if let home = Process.environment("HOME"), home.utf8.first == UInt8(ascii: "/") { return home }
    return Process.passwordDatabaseHome()
  }

  /// The file's settings, in its order; none when the default file is not there.
  static func settings(at location: inout Location) throws(ServeOptions.UsageError) -> [ServeOptions.Setting] {
    let path = location.path
    let bytes: [UInt8]
    do {
      let file = try ConfigurationFile.read(path, role: "the serve options' file")
      bytes = file.bytes
      if let warning = file.warning { Log.warn(warning) }
    } catch {
      switch error {
      case .unreadable(let error):
        // The default file is absent when it cannot be seen (ENOENT, or a folder on the
        // way this user cannot search); one that is there and cannot be read is an error.
        if !location.explicit && (error.code == Errno.noEntry || !FileSystem.exists(path)) { return [] }
        throw .init(message: "\(path): cannot read the serve options' file: \(error)")
      case .unsafe(let text): throw .init(message: text)
      }
    }
    location.found = true
    let root: JSON
    do {
      root = try JSON.parse(bytes, rejectingDuplicateKeys: true)
    } catch {
      throw .init(message: "\(path): not JSON: \(error)")
    }
    guard root.isObject else {
      throw .init(message: "\(path): must be an object of serve options (schema/serve-config.schema.json)")
    }
    let folder = FileSystem.parentFolder(of: path)
    var settings: [ServeOptions.Setting] = []
    for (key, value) in root.members {
      if key.utf8.elementsEqual("$schema".utf8) || key.utf8.elementsEqual("description".utf8) { continue }
      let pointer = JSONPointer.member(key, of: "")
      func refuse(_ reason: String) -> ServeOptions.UsageError { .init(message: "\(path) at \(pointer): \(reason)") }
      guard let option = ServeOption.named(key) else {
        let names = ServeOption.inFile.map(\.name).joined(separator: ", ")
        throw refuse("unknown option (expected one of: \(names))")
      }
      guard option.scope == .everywhere else {
        throw refuse("only on the command line: how a server is reached, or what this run does, is for its starter")
      }
      let text: String?
      switch option.value {
      case .none, .optionalInline:
        guard let flag = value.bool else { throw refuse("must be true or false") }
        guard flag else { continue }
        text = nil
      case .count:
        guard let number = value.integer else { throw refuse("must be a whole number (a JSON integer)") }
        text = String(number)
      case .text, .path:
        guard let string = value.string else { throw refuse("must be a string") }
        guard !string.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
          throw refuse("must not contain control characters")
        }
        if case .path = option.value {
          text = try resolve(string, folder: folder, refuse: refuse)
        } else {
          text = string
        }
      }
      settings.append(ServeOptions.Setting(option: option, text: text, origin: .file(path: path, pointer: pointer)))
    }
    return settings
  }

  /// `~/…` under the home folder, a relative path under `folder`; an absolute one as it is.
  static func resolve(
    _ path: String, folder: String, refuse: (String) -> ServeOptions.UsageError
  ) throws(ServeOptions.UsageError) -> String {
    guard !path.isEmpty else { throw refuse("must not be empty") }
    let bytes = path.utf8
    if bytes.first == UInt8(ascii: "~") {
      guard bytes.count == 1 || bytes.dropFirst().first == UInt8(ascii: "/") else {
        throw refuse("~user is not expanded: write the folder (only ~/ is the home folder)")
      }
      guard let home = home() else { throw refuse("~ needs $HOME") }
      return home + String(decoding: bytes.dropFirst(), as: UTF8.self)
    }
    if bytes.first == UInt8(ascii: "/") { return path }
    return (folder.hasSuffix("/") ? folder : folder + "/") + path
  }
}
