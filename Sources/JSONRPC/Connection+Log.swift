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
}
