import JSON
import JSONRPC
import NetworkModels

extension Subscribe {
  /// The `snapshot` array of a reply, written as the models give its parts
  /// (`Models.snapshot(for:)`): the entities' states, then the lists' ListStates. It stops growing once it passes `limit` (the peer's
  /// `--max-unread-bytes`, as a batch's reply does), so a refused snapshot costs no
  /// more than the limit to write.
  struct Snapshot {
    let limit: Int
    private var states: [UInt8] = []
    private var lists: [UInt8] = []

    init(limit: Int) { self.limit = limit }

    var isOverLimit: Bool { states.count + lists.count > limit }

    mutating func append(_ part: Models.SnapshotPart) {
      switch part {
      case .entity(let state):
        if !states.isEmpty { states.append(UInt8(ascii: ",")) }
        state.encode(into: &states)
      case .list(let list):
        if !lists.isEmpty { lists.append(UInt8(ascii: ",")) }
        list.encode(into: &lists)
      }
    }

    func encode(into buffer: inout [UInt8]) {
      buffer.append(UInt8(ascii: "["))
      buffer.append(contentsOf: states)
      if !states.isEmpty && !lists.isEmpty { buffer.append(UInt8(ascii: ",")) }
      buffer.append(contentsOf: lists)
      buffer.append(UInt8(ascii: "]"))
    }
  }

  /// The answer when the snapshot would pass the peer's limit: nothing was subscribed.
  static func snapshotTooLarge(limit: Int) -> ResponseError {
    var data: [UInt8] = []
    appendLiteral(#"{"path":"/topics","limit":"#, to: &data)
    appendDecimal(Int64(limit), to: &data)
    data.append(UInt8(ascii: "}"))
    return ResponseError(
      .invalidParams,
      "the snapshot of these topics passes the limit of \(limit) bytes (--max-unread-bytes); "
        + "nothing was subscribed: subscribe to fewer or narrower topics (a kind or an id, not every entity)",
      dataText: data)
  }
}
