import Posix

extension ServeOptions {
  /// What `serve --print-config` prints: the file looked for, then one line per option
  /// (name, value in force, where it came from: `default`, `file` or `command line`).
  /// Values are the user's text, escaped for the terminal.
  var printout: String {
    var lines: [String] = []
    if let file = configFile {
      let state =
        file.found ? "read" : file.explicit ? "named by --config-file" : "not there: nothing read, which is no error"
      lines.append("# config file: \(EscapedText.line(file.path)) (\(state))")
    }
    let shown = ServeOption.table.filter { $0.name != "config-file" && $0.name != "print-config" }
    let width = shown.map(\.name.utf8.count).max() ?? 0
    var rows: [(String, String, String)] = []
    for option in shown {
      let last = given.last { $0.option.name == option.name }
      let value: String
      let origin: String
      if let last {
        value = last.text.map(EscapedText.line) ?? "true"
        switch last.origin {
        case .commandLine: origin = "command line"
        case .file: origin = "file"
        }
      } else {
        value = option.defaultText ?? "-"
        origin = "default"
      }
      rows.append((option.name, value, origin))
    }
    let valueWidth = min(48, rows.map(\.1.count).max() ?? 0)
    for (name, value, origin) in rows {
      let namePad = String(repeating: " ", count: width - name.utf8.count + 2)
      let valuePad = String(repeating: " ", count: max(2, valueWidth - value.count + 2))
      lines.append(name + namePad + value + valuePad + origin)
    }
    return lines.joined(separator: "\n") + "\n"
  }
}
