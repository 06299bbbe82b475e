import Posix

/// When an API says it takes requests again, read from `Retry-After` (RFC 9110
/// §10.2.3: delta seconds or an HTTP-date) or from a rate-limit reset header, whose
/// APIs disagree on the form: GitHub's `x-ratelimit-reset` is epoch seconds, others
/// send delta seconds, Mastodon's `X-RateLimit-Reset` is ISO 8601.
public enum ResetTime {
  /// The longest wait believed: a later reset is read as this (a wrong clock or a
  /// misread header must not stop an API for days).
  public static let longest = Duration.seconds(86_400)

  /// A number above this is epoch seconds, else delta seconds: 10⁹ s is 2001-09-09 as
  /// a date and 31 years as a wait, so no real answer is ambiguous.
  public static let epochThreshold = 1_000_000_000.0

  /// How long from `now` (wall-clock seconds since 1970) the reset `value` is: a
  /// number (delta or epoch seconds, fraction allowed), an IMF-fixdate
  /// (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7) or an RFC 3339 / ISO 8601
  /// date-time (`2026-12-01T15:00:00.000Z`, an offset or `Z`). A time already past is
  /// zero; nil when `value` is none of these.
  public static func delay(_ value: String, now: Double) -> Duration? {
    let text = value.trimmingSpaces
    let seconds: Double
    if let number = decimal(text) {
      seconds = number > epochThreshold ? number - now : number
    } else if let date = imfFixdate(text) ?? iso8601(text) {
      seconds = date - now
    } else {
      return nil
    }
    guard seconds > 0 else { return .zero }
    let milliseconds = min(seconds * 1000, Double(longest / .milliseconds(1))).rounded(.up)
    return .milliseconds(Int64(milliseconds))
  }

  /// Wall-clock seconds since 1970 (a reset in epoch seconds or a date needs it; the
  /// loop's clock is monotonic).
  public static func wallClockNow() -> Double { Process.wallClockSeconds() }

  /// Digits with an optional fraction (`1733065200`, `30`, `1.5`), nothing else.
  static func decimal(_ text: String) -> Double? {
    let bytes = Array(text.utf8)
    guard let first = bytes.first, isDigit(first), bytes.allSatisfy({ isDigit($0) || $0 == UInt8(ascii: ".") }),
      bytes.filter({ $0 == UInt8(ascii: ".") }).count <= 1, bytes.last != UInt8(ascii: ".")
    else { return nil }
    return Double(text)
  }

  /// `Sun, 06 Nov 1994 08:49:37 GMT` as epoch seconds.
  static func imfFixdate(_ text: String) -> Double? {
    let parts = text.split(separator: " ")
    guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
      let day = number(parts[1], digits: 2), let month = months.firstIndex(of: String(parts[2])),
      let year = number(parts[3], digits: 4), let time = clock(parts[4])
    else { return nil }
    return epoch(year: year, month: month + 1, day: day, time: time)
  }

  /// `2026-12-01T15:00:00Z`, `2026-12-01T15:00:00.000+01:00` (`t`, `z` or a space as
  /// RFC 3339 allows) as epoch seconds.
  static func iso8601(_ text: String) -> Double? {
    let bytes = Array(text.utf8)
    guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
      [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(bytes[10]),
      let year = number(bytes[0..<4]), let month = number(bytes[5..<7]), let day = number(bytes[8..<10]),
      let time = clock(String(decoding: bytes[11..<19], as: UTF8.self)[...])
    else { return nil }
    var rest = bytes[19...]
    var fraction = 0.0
    if rest.first == UInt8(ascii: ".") {
      let digits = rest.dropFirst().prefix(while: isDigit)
      guard !digits.isEmpty, let value = Double("0." + String(decoding: digits, as: UTF8.self)) else { return nil }
      fraction = value
      rest = rest.dropFirst(1 + digits.count)
    }
    var offset = 0.0
    if rest.elementsEqual([UInt8(ascii: "Z")]) || rest.elementsEqual([UInt8(ascii: "z")]) {
      offset = 0
    } else if rest.count == 6, rest.first == UInt8(ascii: "+") || rest.first == UInt8(ascii: "-"),
      rest[rest.startIndex + 3] == UInt8(ascii: ":"),
      let hours = number(rest[(rest.startIndex + 1)..<(rest.startIndex + 3)]),
      let minutes = number(rest[(rest.startIndex + 4)...]), hours < 24, minutes < 60
    {
      offset = Double(hours * 3600 + minutes * 60) * (rest.first == UInt8(ascii: "-") ? -1 : 1)
    } else {
      return nil
    }
    guard let seconds = epoch(year: year, month: month, day: day, time: time) else { return nil }
    return seconds + fraction - offset
  }

  private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

  /// `HH:MM:SS` as seconds of the day (a leap second's 60 allowed).
  private static func clock(_ text: Substring) -> Int? {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 3, let h = number(parts[0], digits: 2), let m = number(parts[1], digits: 2),
      let s = number(parts[2], digits: 2), h < 24, m < 60, s <= 60
    else { return nil }
    return h * 3600 + m * 60 + s
  }

  private static func number(_ text: Substring, digits: Int) -> Int? {
    text.utf8.count == digits ? number(text.utf8) : nil
  }

  private static func number<C: Collection<UInt8>>(_ bytes: C) -> Int? {
    guard !bytes.isEmpty, bytes.allSatisfy(isDigit) else { return nil }
    return bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
  }

  private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

  /// Seconds since 1970 of a UTC civil date and time (Howard Hinnant's days_from_civil).
  private static func epoch(year: Int, month: Int, day: Int, time: Int) -> Double? {
    guard (1...12).contains(month), (1...31).contains(day) else { return nil }
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let days = era * 146_097 + dayOfEra - 719_468
    return Double(days * 86_400 + time)
  }
}
