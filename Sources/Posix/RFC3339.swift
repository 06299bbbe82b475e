/// Times as a person reads them (RFC 3339 in UTC): the log's stamps, `inspect`'s wall
/// clock and the values a REST configuration sends (`{now}`).
public enum RFC3339 {
  /// `2026-12-02T15:04:05.123Z`.
  public static func milliseconds(since1970 ms: Int64) -> String {
    let (seconds, milliseconds) = floorDivision(ms, 1000)
    return wholeSeconds(since1970: seconds, fraction: "." + digits(milliseconds, 3))
  }

  /// `2026-12-02T15:04:05Z`.
  public static func seconds(since1970 seconds: Int64) -> String {
    wholeSeconds(since1970: seconds, fraction: "")
  }

  private static func wholeSeconds(since1970 seconds: Int64, fraction: String) -> String {
    let (days, time) = floorDivision(seconds, 86_400)
    let (year, month, day) = civilDate(daysSince1970: days)
    return "\(digits(year, 4))-\(digits(month, 2))-\(digits(day, 2))T\(digits(time / 3600, 2)):"
      + "\(digits(time / 60 % 60, 2)):\(digits(time % 60, 2))\(fraction)Z"
  }

  /// The proleptic Gregorian date of a day count (H. Hinnant's `civil_from_days`).
  static func civilDate(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let z = daysSince1970 + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let shiftedMonth = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
    let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }

  /// Quotient rounded down and a remainder that is never negative, so times before 1970
  /// read as dates do.
  private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
    let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
    return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
  }

  private static func digits(_ value: Int64, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }
}
