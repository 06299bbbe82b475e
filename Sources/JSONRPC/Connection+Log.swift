import Posix

extension Connection {
  public static let maxClientNameScalars = 100

  /// The fields that name this connection in a log line: its number, and the client's
  /// name and version once it gave them.
  public var logFields: [Log.Field] {
    var fields = [Log.Field("connection", id)]
    if let clientName { fields.append(Log.Field("client", clientName)) }
    if let clientVersion { fields.append(Log.Field("clientVersion", clientVersion)) }
    return fields
  }

  /// `clientInfo`'s name and version, kept for the log.
  public func setClientInfo(name: String?, version: String?) {
    func cut(_ text: String?) -> String? {
      text.map { String(String.UnicodeScalarView($0.unicodeScalars.prefix(Connection.maxClientNameScalars))) }
    }
    clientName = cut(name)
    clientVersion = cut(version)
    Log.event(.info, "connection.client", "a client said who it is", logFields)
  }

  /// A notification of this peer failed: nobody is answered, so the log says it, within
  /// the connection's budget (`LogBudget`).
  func logFailedNotification(method: String, error: String) {
    let (write, earlier) = notificationFailures.admit(now: Process.monotonicNanoseconds())
    if earlier > 0 { logSuppressedNotificationFailures(earlier) }
    guard write else { return }
    Log.event(
      .warn, "notification.failed", "a notification failed (there is nobody to answer)",
      [.init("method", method), .init("error", error)] + logFields)
  }

  /// Tells the failed notifications not logged one by one (the connection closes).
  func flushNotificationFailures() {
    let count = notificationFailures.takeSuppressed()
    if count > 0 { logSuppressedNotificationFailures(count) }
  }

  private func logSuppressedNotificationFailures(_ count: Int) {
    Log.event(
      .warn, "notification.suppressed",
      "more notifications failed than the log tells one by one (\(LogBudget.linesPerMinute) a minute)",
      [.init("count", count)] + logFields)
  }
}
