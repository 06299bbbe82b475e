import CSystem

public enum Memory {
  /// Returns the heap's free pages to the system. glibc keeps freed memory for reuse,
  /// so without this a process that dropped most of what it held would still show the
  /// peak as resident.
  public static func trim() { nm_malloc_trim() }
}
