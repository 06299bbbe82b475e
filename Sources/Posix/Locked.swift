import Glibc

/// A value behind a `pthread_mutex_t`, for the few things two threads share (the
/// mailboxes between the models' loop and libcurl's thread). Not `Synchronization.Mutex`:
/// on Linux that is a bare futex, which ThreadSanitizer cannot see, so every hand-over
/// through it read as a race; glibc's mutex it knows.
public final class Locked<Value: Sendable>: @unchecked Sendable {
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var value: Value

  public init(_ value: Value) {
    self.value = value
    mutex = .allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the value, no other thread inside it meanwhile. The corresponding
  /// C functions are `pthread_mutex_lock` and `pthread_mutex_unlock`.
  public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
