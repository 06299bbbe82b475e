// The libFuzzer entry shared by every target: the runtime is linked without its
// main() (scripts/fuzz links libclang_rt.fuzzer_no_main), so each target's @main
// hands its test to `runFuzzer`, which calls LLVMFuzzerRunDriver.

import Glibc

@_silgen_name("LLVMFuzzerRunDriver")
private func llvmFuzzerRunDriver(
  _ argc: UnsafeMutablePointer<Int32>,
  _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
  _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target's test; a C callback cannot capture, so it waits here. Set once, before
/// the driver starts, and only read on its thread.
nonisolated(unsafe) private var currentTest: ((UnsafeRawBufferPointer) -> Void)?

/// Runs libFuzzer with the process's arguments over `test`, then exits with its status.
/// A failure is a trap (precondition, sanitizer report) inside `test`.
public func runFuzzer(_ test: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
  // A harness may close a peer while replies are queued: the server must see EPIPE,
  // not die of SIGPIPE (netmodel's main does the same).
  signal(SIGPIPE, SIG_IGN)
  currentTest = test
  var argc = CommandLine.argc
  var argv = CommandLine.unsafeArgv
  let status = llvmFuzzerRunDriver(&argc, &argv) { data, size in
    currentTest!(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
  }
  exit(status)
}

/// Writes `text` to stderr unbuffered (a report just before `abort()`).
public func writeToStderr(_ text: String) {
  var text = text
  text.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
}

/// `bytes` readable in a report: printable ASCII as is, the rest as \xNN.
public func escaped<Bytes: Collection<UInt8>>(_ bytes: Bytes, limit: Int = 4096) -> String {
  var result = ""
  for byte in bytes.prefix(limit) {
    switch byte {
    case 0x0A: result += "\\n\n"
    case 0x0D: result += "\\r"
    case 0x20..<0x7F where byte != 0x5C: result.unicodeScalars.append(Unicode.Scalar(byte))
    default: result += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
    }
  }
  return bytes.count > limit ? result + "…" : result
}

/// Reports a broken property of `input` and stops: libFuzzer writes the crash file.
public func fuzzFailure(_ what: String, input: UnsafeRawBufferPointer? = nil) -> Never {
  var text = "FUZZ FAILURE: \(what)\n"
  if let input { text += "--- input (\(input.count) bytes)\n\(escaped(input))\n" }
  writeToStderr(text)
  abort()
}

/// Reads fuzz bytes as a sequence of small choices and then chunks of the rest.
public struct FuzzReader {
  private let bytes: UnsafeRawBufferPointer
  public private(set) var offset = 0

  public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

  public var isAtEnd: Bool { offset >= bytes.count }
  public var remaining: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[offset...]) }

  /// The next byte, 0 once the input is used up.
  public mutating func byte() -> UInt8 {
    guard offset < bytes.count else { return 0 }
    defer { offset += 1 }
    return bytes[offset]
  }

  /// Bytes up to the next `separator` (not included) or the end.
  public mutating func field(separator: UInt8 = 0) -> [UInt8] {
    let rest = bytes[offset...]
    let end = rest.firstIndex(of: separator) ?? bytes.count
    defer { offset = min(bytes.count, end + 1) }
    return Array(bytes[offset..<end])
  }
}

@_silgen_name("__lsan_disable") private func lsanDisable()
@_silgen_name("__lsan_enable") private func lsanEnable()

/// Runs `body` (a target's set-up before the first input) with its allocations hidden
/// from LeakSanitizer. What lives for the whole process may be reachable only through
/// pointers LSan cannot read: Swift stores multi-payload enum tags in a pointer's
/// spare bits (a `FollowingRule.pointer(JSONPointer)` in a configuration kept in a
/// global was reported leaked), like the weak side tables of Fuzz/lsan.supp.
public func withoutLeakChecks<T>(_ body: () -> T) -> T {
  lsanDisable()
  defer { lsanEnable() }
  return body()
}
