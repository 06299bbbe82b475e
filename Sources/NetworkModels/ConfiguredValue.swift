/// The rule every configured value (`{me}`) keeps, whichever backend holds it.
public enum ConfiguredValue {
  /// Values go into paths (percent-encoded) and headers (as they are): a line break
  /// would add a header, and a value of dots alone would be a dot segment.
  public static func problem(_ value: String) -> String? {
    if value.isEmpty { return "must not be empty" }
    if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) { return "must not contain line breaks" }
    if value.utf8.allSatisfy({ $0 == UInt8(ascii: ".") }) { return "must not be only dots (a dot segment)" }
    return nil
  }
}
