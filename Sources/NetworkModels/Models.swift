import Posix

/// The network models of one backend: the follow states, the lists joined with them,
/// the preloader and the outbox, wired together. A follow shows in every loaded list
/// holding the entity, a confirmed one makes the lists depending on its kind out of
/// date, and every change of an entity or a list reaches the observer as one
/// `Change`, in the order it happened.
///
/// Must be used on the loop's thread.
public final class Models {
  public enum Change {
    /// The entity's new state.
    case entity(EntityState)
    /// The list changed: its state is `lists.snapshot(key)`.
    case list(ListKey)
  }

  /// How a follow, unfollow or setFollowState is answered.
  public enum MutationOutcome {
    /// Accepted (its intent durable), or settled when awaited.
    case state(EntityState)
    case failure(FollowStore.SettleFailure)
    /// The process stops before the awaited mutation settled: the intent stays in the
    /// outbox for the next start.
    case stopped(EntityState)
  }

  public let store: FollowStore
  /// The store's backend and its placeholder check, held here too: every request is
  /// admitted through them, and asking the store for them retained the store (which
  /// other objects refer to weakly, so each retain of it costs several times as much)
  /// and copied its capabilities.
  let backend: ModelBackend
  public let placeholders: PlaceholderValidating?
  public let lists: ListStore
  public let preloader: Preloader
  /// Made durable once per loop iteration (`commitIntents`), before replies are written.
  public let outbox: Outbox?
  /// Weak: an observer may own the models, and may go before them (the fuzzer makes a
  /// new service on the same server after `exit`).
  public weak let observer: ModelObserver?
  /// Awaited mutations not yet settled, by the order they came in.
  private var awaited: [Int: (key: EntityKey, reply: (MutationOutcome) -> Void)] = [:]
  private var nextAwaited = 0
  /// Replies of this turn's mutations, held until their intents are on disk.
  private var repliesAwaitingCommit: [(state: EntityState, reply: (MutationOutcome) -> Void)] = []

  public init(store: FollowStore, outbox: Outbox? = nil, observer: ModelObserver) {
    self.store = store
    self.outbox = outbox
    self.observer = observer
    backend = store.backend
    placeholders = store.capabilities.placeholders
    lists = ListStore(store: store)
    preloader = Preloader(store: store)
    store.onChange = { [weak self] state in
      guard let self else { return }
      self.observer?.modelChanged(.entity(state))
      self.lists.entityChanged(state.key)
    }
    store.onConfirmed = { [weak self] key in self?.lists.mutationConfirmed(key) }
    lists.onChange = { [weak self] key in self?.observer?.modelChanged(.list(key)) }
    lists.hasSubscribers = { [weak self] key in self?.observer?.holds(key) ?? false }
    // Eviction keeps what anyone still needs: a subscription by exact topic, a list
    // in memory holding the entity, a preload.
    store.isHeld = { [weak self] key in
      guard let self else { return false }
      return self.observer?.holds(key) == true || self.lists.holds(key) || self.preloader.isBusy(key)
    }
  }

  // MARK: What the backend can do

  public var environments: ConfigurableBackend? { store.capabilities.environments }
  public var statistics: BackendStatistics? { store.capabilities.statistics }

  // MARK: Mutations

  /// Asks for `key` to be followed or not, once admitted; `reply` is called once: with
  /// the state once its intent is durable, or, when `awaitSettle`, once the backend
  /// settled.
  public func setFollowing(
    _ key: EntityKey, _ following: Bool, awaitSettle: Bool, reply: @escaping (MutationOutcome) -> Void
  ) throws(AdmissionProblem) {
    try admit(key)
    guard awaitSettle else {
      let state = store.setFollowing(key, following)
      // The reply promises the intent: it waits for this turn's commit (even a repeat
      // of a mutation earlier in this turn, whose record is not on disk yet either).
      if let outbox, outbox.needsCommit {
        repliesAwaitingCommit.append((state, reply))
      } else {
        reply(.state(state))
      }
      return
    }
    let id = nextAwaited
    nextAwaited += 1
    awaited[id] = (key, reply)
    store.setFollowing(key, following) { [weak self] result in
      guard self?.awaited.removeValue(forKey: id) != nil else { return }
      switch result {
      case .success(let state): reply(.state(state))
      case .failure(let failure): reply(.failure(failure))
      }
    }
  }

  /// Makes this turn's intents durable, then releases the replies that promise them.
  /// A mutation whose intent could not be saved was never accepted: the entity goes
  /// back to the intent on disk and the reply is a retryable failure, so nothing is
  /// acknowledged that a crash could lose. Calls to the backend wait for this commit
  /// (`FollowStore.sendCommittedIntents`): a refused mutation is never sent either.
  /// The server stops: every line still summed for later (evictions) is written now.
  public func writeSummedLogLines() { store.evictionReport.flush() }

  public func commitIntents() {
    var notSaved: [EntityKey: FollowFailure] = [:]
    // Every turn: a turn with only settlements writes them without an fsync.
    if let outbox, case .failure(let unsaved) = outbox.commitOrTakeBack() {
      let failure = FollowFailure(.unavailable, "could not save the intent: \(unsaved.error)")
      for (key, durable) in unsaved.intents {
        notSaved[key] = failure
        store.intentNotSaved(key, durable: durable, failure: failure)
      }
    }
    store.sendCommittedIntents()
    guard !repliesAwaitingCommit.isEmpty else { return }
    let replies = repliesAwaitingCommit
    repliesAwaitingCommit.removeAll()
    for (state, reply) in replies {
      if let failure = notSaved[state.key] {
        reply(.failure(FollowStore.SettleFailure(failure: failure, state: store.state(state.key))))
      } else {
        reply(.state(state))
      }
    }
  }

  /// The process stops: every awaited mutation still pending is answered `.stopped`.
  public func stopAwaitedMutations() {
    let waiting = awaited.sorted { $0.key < $1.key }
    awaited.removeAll()
    for (_, mutation) in waiting { mutation.reply(.stopped(store.state(mutation.key))) }
  }

  // MARK: Configuration

  /// `configure {authToken}` (nil removes it). With `resend`, intents and reads
  /// refused for want of credentials go out again now (also when the token is the one
  /// set already: a host signing in again). True when the token changed.
  @discardableResult
  public func setAuthToken(_ token: String?, resend: Bool) -> Bool {
    guard let environments else { return false }
    let change = environments.setAuthToken(token)
    if change == .refused { return false }
    if resend { store.credentialsChanged() }
    return change == .changed
  }

  /// `configure {values}`, set in order (nil forgets one); returns the names whose
  /// value changed. What was fetched through a changed value is stale at once: the
  /// states of kinds whose requests name it are unknown until read again, and lists
  /// whose requests name it start over (ListStore `valuesChanged`).
  @discardableResult
  public func setValues(_ values: [(name: String, value: String?)]) -> [String] {
    guard let environments else { return [] }
    var changed: [String] = []
    for (name, value) in values {
      let before = environments.value(name)
      _ = environments.setValue(name, value)
      let after = environments.value(name)
      let same = before.map { old in after.map { old.utf8.elementsEqual($0.utf8) } ?? false } ?? (after == nil)
      if !same && !changed.contains(name) { changed.append(name) }
    }
    guard !changed.isEmpty else { return [] }
    let uses = environments.usesOfValues(changed)
    Log.info(
      "values \(changed.joined(separator: ", ")) changed: states of \(uses.kinds.sorted()) and lists "
        + "\(uses.lists.sorted()) are read again")
    store.valuesChanged(kinds: uses.kinds)
    lists.valuesChanged(uses.lists)
    return changed
  }

  /// Intents and states belong to the environment they were made in or read from:
  /// the old environment's pending intents stay in the outbox for it (sent when it is
  /// active again, in this run or a later one), every cached state and list is dropped
  /// and read again here, and this environment's waiting intents are sent. A backend
  /// without environments has nothing to switch.
  public func switchEnvironment(from old: String, to new: String) {
    guard let environments else { return }
    _ = environments.selectEnvironment(new)
    Log.info("environment \(old) → \(new): \(old)'s pending intents wait for it; states are read again in \(new)")
    outbox?.switchEnvironment(to: new)
    store.environmentChanged(
      awaitFailure: FollowFailure(
        .unavailable,
        "the environment changed to \(new); this intent stays pending for \(old) and is sent when \(old) is active again"
      ))
    lists.environmentChanged()
  }
}
