import Glibc

public enum InternetAddress {
  /// The bytes of an IPv4 (4 bytes) or IPv6 (16 bytes) address written as text, nil
  /// when the text is neither. The corresponding C function is `inet_pton`.
  public static func bytes(of text: String) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: 16)
    if inet_pton(AF_INET, text, &buffer) == 1 { return Array(buffer.prefix(4)) }
    if inet_pton(AF_INET6, text, &buffer) == 1 { return buffer }
    return nil
  }
}
