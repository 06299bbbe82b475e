/// Wall-clock times as a person reads them in `inspect`: RFC 3339 in UTC, to the
/// millisecond (`2026-12-02T15:04:05.123Z`).
enum WallClockText {
  static func iso8601(millisecondsSince1970 ms: Int64) -> String {
    let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
    let milliseconds = ms - seconds * 1000
    var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let time = seconds - days * 86_400
    // Howard Hinnant's civil_from_days.
    days += 719_468
    let era = (days >= 0 ? days : days - 146_096) / 146_097
    let dayOfEra = days - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    return "\(digits(year, 4))-\(digits(month, 2))-\(digits(day, 2))T\(digits(time / 3600, 2)):"
      + "\(digits(time / 60 % 60, 2)):\(digits(time % 60, 2)).\(digits(milliseconds, 3))Z"
  }

  private static func digits(_ value: Int64, _ count: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, count - text.count)) + text
  }
}
