/// Where accepted mutations are made durable: the latest wanted state per entity,
/// recorded before the reply is written and replayed on the next start.
public protocol IntentLog: AnyObject {
  /// Records the wanted state of `key`; nil when it settled (confirmed or rolled back)
  /// and no longer needs replaying.
  func record(_ key: EntityKey, wanted: Bool?)

  /// The intents that were not settled when the process last stopped.
  func unsettledIntents() -> [(EntityKey, Bool)]

  /// Number of unsettled intents now.
  var count: Int { get }

  /// Whether the intent of `key` recorded last is on disk (nothing recorded since the
  /// last commit): a call to the backend for it waits until it is.
  func isDurable(_ key: EntityKey) -> Bool
}

extension IntentLog {
  /// A log that writes nothing (tests): every intent counts as durable.
  public func isDurable(_ key: EntityKey) -> Bool { true }
}
