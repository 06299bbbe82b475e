import JSON

extension Framing {
  /// Appends one framed message whose body `encodeBody` writes, with no extra copy
  /// for newline-delimited peers.
  func appendFrame(to output: inout [UInt8], scratch: inout [UInt8], encodeBody: (inout [UInt8]) -> Void) {
    switch self {
    case .newlineDelimited:
      encodeBody(&output)
      output.append(0x0A)
    case .contentLength:
      scratch.removeAll(keepingCapacity: true)
      encodeBody(&scratch)
      appendDecimal(Int64(scratch.count), between: "Content-Length: ", and: "\r\n\r\n", to: &output)
      output.append(contentsOf: scratch)
    }
  }
}
