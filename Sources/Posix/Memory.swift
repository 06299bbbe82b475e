import CSystem
import Glibc

public enum Memory {
  /// Returns the heap's free pages to the system. glibc keeps freed memory for reuse,
  /// so without this a process that dropped most of what it held would still show the
  /// peak as resident.
  public static func trim() { nm_malloc_trim() }

  /// The offset of the first `byte` in `bytes`, nil if there is none: memchr, which
  /// beats a generic search on a connection's input. Inlinable so the hot path pays no
  /// call into Posix for it.
  @inlinable
  public static func firstOffset(of byte: UInt8, in bytes: UnsafeRawBufferPointer) -> Int? {
    guard let base = bytes.baseAddress, !bytes.isEmpty, let found = memchr(base, Int32(byte), bytes.count) else {
      return nil
    }
    return base.distance(to: UnsafeRawPointer(found))
  }

  /// Whether the `count` bytes at `first` and at `second` are the same: memcmp.
  @inlinable
  public static func equal(_ first: UnsafeRawPointer, _ second: UnsafeRawPointer, count: Int) -> Bool {
    memcmp(first, second, count) == 0
  }
}
