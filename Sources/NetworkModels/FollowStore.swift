import EventLoop
import Posix

/// The follow network model of every entity: the shown state changes at once
/// (optimistic), one backend call per entity is in flight, toggles that arrive
/// meanwhile only move the wanted state, transient failures are retried, permanent
/// ones roll back to what the backend last confirmed, and every change is reported
/// through `onChange`.
///
/// Must be used on the loop's thread.
public final class FollowStore {
  public typealias Completion = (Result<EntityState, SettleFailure>) -> Void

  /// A failure together with the state the entity was left in.
  public struct SettleFailure: Error {
    public var failure: FollowFailure
    public var state: EntityState
  }

  public struct Counters {
    public var backendCalls = 0
    public var backendMutations = 0
    public var backendReads = 0
    /// Reads answered by a call already in flight, and mutations that needed none.
    public var dedupeHits = 0
    public var cacheHits = 0
    public var retries = 0
    public var rollbacks = 0
    /// Entities dropped from memory (see `eviction`).
    public var evicted = 0
  }

  public let loop: EventLoop
  /// Ended when the store goes. Its callbacks (backend answers, timers, tasks) hold it
  /// and the store `unowned`, never weak: one weak reference gives an object a side
  /// table, and then each retain of it, a few every request, costs ~10 times as much.
  /// An `unowned` reference keeps the store's memory until the callback goes, and the
  /// callback reads `ended` before it touches the store.
  let lifetime = Lifetime()
  final class Lifetime {
    var ended = false
  }
  public let backend: ModelBackend
  /// What the backend does beyond follows, as it said when the store was made.
  public let capabilities: BackendCapabilities
  public var policy: RetryPolicy
  /// Kinds whose backend wants another retry policy than `policy`.
  public var kindPolicies: [String: RetryPolicy] = [:]
  public let intentLog: IntentLog?
  /// Called after every change of an entity's state, with the new state.
  public var onChange: ((EntityState) -> Void)?
  /// Called when the backend confirmed a follow or unfollow (not a read).
  public var onConfirmed: ((EntityKey) -> Void)?
  /// Told of each intent accepted, each call made for it and each outcome it meets
  /// (`MutationLedger`).
  public var onMutation: ((EntityKey, MutationEvent) -> Void)?
  public internal(set) var counters = Counters()
  /// Where versions start in this run (lists use it too).
  public var versions = VersionBase()

  /// The compact part every entity has: 24 bytes beside its key.
  struct Record {
    /// The run's count (`VersionBase.next`) at its last change. Declared first and
    /// `bits` last, so that the record packs into 24 bytes.
    var version: UInt64 = 0
    var confirmedAt = LoopInstant(nanoseconds: 0)
    /// The eviction tick of its last use.
    var touched: UInt32 = 0
    var bits: UInt8 = 0

    static let followingKnown: UInt8 = 1
    static let followingValue: UInt8 = 2
    static let confirmedKnown: UInt8 = 4
    static let confirmedValue: UInt8 = 8
    /// The backend holds a follow request awaiting approval (`confirmed` is false).
    static let requestedValue: UInt8 = 16
    /// `confirmed` came from the state folder at start (`WarmStates`), not from an
    /// answer of this run: shown, marked stale, never trusted to spare a call.
    static let staleValue: UInt8 = 32

    var following: Bool? {
      get { bits & Record.followingKnown == 0 ? nil : bits & Record.followingValue != 0 }
      set { set(newValue, known: Record.followingKnown, value: Record.followingValue) }
    }

    var confirmed: Bool? {
      get { bits & Record.confirmedKnown == 0 ? nil : bits & Record.confirmedValue != 0 }
      set { set(newValue, known: Record.confirmedKnown, value: Record.confirmedValue) }
    }

    var requested: Bool {
      get { bits & Record.requestedValue != 0 }
      set { bits = newValue ? bits | Record.requestedValue : bits & ~Record.requestedValue }
    }

    var isStale: Bool {
      get { bits & Record.staleValue != 0 }
      set { bits = newValue ? bits | Record.staleValue : bits & ~Record.staleValue }
    }

    /// What the backend answered becomes what it is known to hold.
    mutating func confirm(_ answer: FollowAnswer) {
      confirmed = answer.following
      requested = answer == .requested
      isStale = false
    }

    private mutating func set(_ value: Bool?, known: UInt8, value valueBit: UInt8) {
      bits &= ~(known | valueBit)
      if let value { bits |= known | (value ? valueBit : 0) }
    }
  }

  /// The callers waiting for one read, in order: nearly always one, kept inline, where
  /// an array was allocated, grown and freed for every read.
  struct Waiters: Sequence {
    private var first: Completion?
    private var rest: [Completion] = []

    var isEmpty: Bool { first == nil }

    mutating func append(_ waiter: @escaping Completion) {
      if first == nil { first = waiter } else { rest.append(waiter) }
    }

    func makeIterator() -> Iterator { Iterator(first: first, rest: rest.makeIterator()) }

    struct Iterator: IteratorProtocol {
      var first: Completion?
      var rest: IndexingIterator<[Completion]>

      mutating func next() -> Completion? {
        if let waiter = first {
          first = nil
          return waiter
        }
        return rest.next()
      }
    }
  }

  /// What only an entity with work under way needs; dropped when it goes idle.
  final class Activity {
    var wanted: Bool?
    var inFlight: Bool?
    var attempt = 0
    var retryTimer: EventLoop.TimerID?
    var settleWaiters: [Completion] = []
    var readInFlight = false
    var readStartedAt: UInt64 = 0
    var readWaiters = Waiters()
    /// Bumped by every accepted mutation: a read that started before it is stale.
    var mutationSerial: UInt64 = 0
    /// A call failed in a way that says nothing of whether the backend did it (a
    /// dropped connection, a timeout, a 5xx after the change was made), so `confirmed`
    /// may be stale: an intent equal to it is still sent, and a rollback reads the
    /// state again. Cleared by the next answered call or read.
    var uncertain = false
    /// Mutation calls sent so far, and at the start of the read under way: a read that
    /// overlapped a call may have been answered before the call was done, so it says
    /// nothing newer than the call's own answer.
    var callsSent: UInt64 = 0
    var readStartedCalls: UInt64 = 0
    var readOverlapsCall = false
    /// The read under way checks a rollback: when it finds what the rollback showed,
    /// the rollback's reason stays shown.
    var readChecksRollback = false
    /// A check read that failed transiently is tried again, as a mutation would be.
    var checkAttempt = 0
    var checkTimer: EventLoop.TimerID?
    /// The call for `wanted` waits for the intent log's commit (`sendCommittedIntents`).
    var awaitsCommit = false
    /// When `wanted` was set from none, and when the read under way started: what
    /// `inspect` shows as "since" (read only there).
    var pendingSince = LoopInstant(nanoseconds: 0)
    var readSince = LoopInstant(nanoseconds: 0)

    var isIdle: Bool {
      wanted == nil && inFlight == nil && retryTimer == nil && settleWaiters.isEmpty && !readInFlight
        && readWaiters.isEmpty && !uncertain && checkTimer == nil
    }
  }

  var records: [EntityKey: Record] = [:]
  var activities: [EntityKey: Activity] = [:]
  var errors: [EntityKey: ShownFailure] = [:]
  /// An entity's `error` and when it was shown (for `inspect`).
  struct ShownFailure {
    var failure: FollowFailure
    var at: LoopInstant
  }
  /// Entities whose `error` came from a read, not a mutation: a failed read replaces
  /// only these, so a rollback's reason is not hidden by the read that follows it.
  var readErrors: Set<EntityKey> = []
  /// Calls waiting for the intent log's next commit, in the order they were asked for.
  var sendsAwaitingCommit: [(key: EntityKey, work: Activity)] = []
  /// Detail objects (compact JSON text) of the entities whose backend answered one.
  var attributes: [EntityKey: String] = [:]
  private var random: SplitMix64
  private var mutationSerial: UInt64 = 0
  /// Entities whose intent the backend refused for want of credentials (401/403):
  /// still pending and in the outbox, sent again by `credentialsChanged()`.
  var waitingForCredentials: Set<EntityKey> = []
  /// Entities whose last read was refused for want of credentials: read again then.
  var readsWaitingForCredentials: Set<EntityKey> = []
  /// Where an entity not held starts: a step taken at the last eviction, above every
  /// version an evicted entity showed, so one evicted and seen again never goes
  /// backwards, behaves exactly as one never seen (which starts here too), and shows
  /// a version above what a client held before the eviction (`subscribe`'s `since`).
  var versionFloor: UInt64 = 0
  /// How many entities stay in memory, and for how long one nobody uses stays.
  public var eviction = EvictionPolicy.entities {
    didSet { evictionClock.policy = eviction }
  }
  /// Whether something outside the store still needs `key` (a subscription by exact
  /// topic, a list holding it, a preload): such an entity is never evicted.
  public var isHeld: ((EntityKey) -> Bool)?
  /// Made on first use, as a `lazy var` was; read through `tick` on the hot paths,
  /// where the lazy getter retained and released the clock at each read, about five
  /// times a backend read.
  private var evictionClockStorage: EvictionClock?
  var evictionClock: EvictionClock {
    if let clock = evictionClockStorage { return clock }
    let clock = EvictionClock(loop: loop, policy: eviction) { [unowned self] in
      self.evictIdle()
    }
    evictionClockStorage = clock
    return clock
  }
  /// The eviction clock's current tick (see `evictionClock`).
  var tick: UInt32 { evictionClockStorage?.tick ?? evictionClock.tick }
  /// Evicting for the count waits until the count passes this, so a store whose
  /// entities are all held does not scan them for each new one.
  var nextCountCheck = 0
  var countCheckQueued = false
  var byteCheckQueued = false
  /// The bytes entities and lists hold, and their bound (shared with the list store).
  public let heldBytes = HeldBytes()
  /// Shared with the lists' store: one line for both.
  private(set) lazy var evictionReport = EvictionReport(loop: loop)
  /// Bumped when another environment becomes active: answers to calls made in the
  /// old one are not about this one's entities, and are dropped.
  private var environmentEpoch = 0

  public init(
    loop: EventLoop, backend: ModelBackend, policy: RetryPolicy = RetryPolicy(), intentLog: IntentLog? = nil,
    seed: UInt64 = 0x6E65_746D_6F64_656C
  ) {
    self.loop = loop
    self.backend = backend
    capabilities = backend.capabilities
    self.policy = policy
    self.intentLog = intentLog
    random = SplitMix64(seed: seed)
    capabilities.attributes?.onAttributes = { [lifetime, unowned self] key, text in
      guard !lifetime.ended else { return }
      self.setAttributes(key, text)
    }
  }

  deinit { lifetime.ended = true }

  /// News of `key`'s follow state from elsewhere (a list's answer): taken as confirmed
  /// when no mutation or read of it is under way, which could be newer.
  public func observe(_ key: EntityKey, following: Bool) {
    guard activities[key] == nil else { return }
    var record = records[key] ?? freshRecord
    let before = record
    // A list of follows says nothing of requests: an entity missing from it may still
    // have one awaiting approval, so only "following" replaces what is known.
    if following || !record.requested { record.confirm(FollowAnswer(following)) }
    record.following = record.confirmed
    record.confirmedAt = loop.clock.now
    records[key] = record
    let hadError = forgetError(key)
    if before.bits != record.bits || hadError { changed(key) }
  }

  /// Keeps an entity's detail object (compact JSON text); a change is a new version.
  public func setAttributes(_ key: EntityKey, _ text: String) {
    let old = attributes[key]
    guard old != text else { return }
    attributes[key] = text
    heldBytes.entityChanged(from: old, to: text)
    changed(key)
    keepBytesBounded()
  }

  public var entityCount: Int { records.count }

  /// The record of an entity not in memory: never seen, or evicted.
  var freshRecord: Record { Record(version: versionFloor, touched: tick) }

  /// Sends again what was wanted but not confirmed when the process last stopped.
  /// An intent of a kind this backend does not have (a configuration that lost it) is
  /// not sent and stays in the log untouched, for a start whose configuration has the
  /// kind again: the user asked for it, and only the user may replace it.
  ///
  /// Likewise an id the configuration's endpoints cannot send (a request with it is
  /// refused -32602): the replay passes the checks a request passes.
  public func replayIntents() {
    guard let intentLog else { return }
    var kept: [String: Int] = [:]
    var unsendable: [String: (count: Int, reason: String)] = [:]
    var replayed = 0
    for (key, wanted) in intentLog.unsettledIntents() {
      if backend.kindProblem(key.kind) != nil {
        kept[key.kind, default: 0] += 1
        continue
      }
      if let problem = capabilities.placeholders?.validatePlaceholders(kind: key.kind, id: key.id) {
        unsendable[key.kind, default: (0, problem.reason)].count += 1
        continue
      }
      Log.debug("replaying \(wanted ? "follow" : "unfollow") of \(key) from the outbox")
      replayed += 1
      _ = setFollowing(key, wanted, force: true)
    }
    if replayed > 0 {
      Log.event(
        .info, "replay", "sending again the intents the last run left unconfirmed", [.init("intents", replayed)])
    }
    for (kind, count) in kept.sorted(by: { $0.key < $1.key }) {
      Log.warn(
        "the outbox holds \(count) pending intent(s) of kind \(kind), which this configuration does not describe; "
          + "they are kept, not sent, until a configuration with \(kind) delivers them")
    }
    for (kind, intents) in unsendable.sorted(by: { $0.key < $1.key }) {
      Log.warn(
        "the outbox holds \(intents.count) pending intent(s) of kind \(kind) whose id this configuration cannot send "
          + "(\(intents.reason)); they are kept, not sent")
    }
  }

  // MARK: Reading state

  /// Counts as a use of the entity (see `eviction`).
  public func state(_ key: EntityKey) -> EntityState {
    guard let index = records.index(forKey: key) else { return state(key, freshRecord) }
    records.values[index].touched = tick
    return state(key, records.values[index])
  }

  /// Hashing a key costs more than the rest of a cached read: the side tables, empty
  /// in the common case, are only asked when they hold something.
  private func state(_ key: EntityKey, _ record: Record) -> EntityState {
    state(key, record, pending: activities.isEmpty ? false : activities[key]?.wanted != nil)
  }

  /// `pending` given by a caller that holds the entity's activity. Inlined: the cached
  /// read comes through here too.
  @inline(__always)
  private func state(_ key: EntityKey, _ record: Record, pending: Bool) -> EntityState {
    EntityState(
      key: key, following: record.following, confirmed: record.confirmed, pending: pending,
      requested: record.requested,
      error: errors.isEmpty ? nil : errors[key]?.failure, attributes: attributes.isEmpty ? nil : attributes[key],
      version: versions.base &+ record.version, staleAgeMs: record.isStale ? staleAge(record) : nil)
  }

  public func isKnown(_ key: EntityKey) -> Bool { records[key]?.confirmed != nil }

  /// Every entity the store holds, for wildcard subscriptions.
  public func keys(kind: String? = nil) -> [EntityKey] {
    guard let kind else { return Array(records.keys) }
    return records.keys.filter { $0.kind == kind }
  }

  // MARK: Mutations

  /// Asks for `key` to be followed or not. Returns the state to reply with at once;
  /// `settled`, when given, is called once the backend settled (for `await: true`).
  @discardableResult
  public func setFollowing(_ key: EntityKey, _ wanted: Bool, settled: Completion? = nil) -> EntityState {
    setFollowing(key, wanted, settled: settled, force: false)
  }

  private func setFollowing(_ key: EntityKey, _ wanted: Bool, settled: Completion? = nil, force: Bool) -> EntityState {
    var record = records[key] ?? freshRecord
    let activity = activities[key]
    let pendingIntent = activity?.wanted
    let alreadyKnown = pendingIntent.map { $0 == wanted } ?? backendHas(key, wanted)
    if alreadyKnown && !force {
      counters.dedupeHits += 1
      let current = state(key)
      if let settled {
        if !current.pending {
          settled(.success(current))
        } else if waitingForCredentials.contains(key) {
          // Nothing is sent until credentials change, which may be never: the caller
          // hears now what the first one heard (see `waitForCredentials`).
          settled(.failure(SettleFailure(failure: credentialsFailure(key), state: current)))
        } else {
          self.activity(key).settleWaiters.append(settled)
        }
      }
      return current
    }
    let work = self.activity(key)
    mutationSerial += 1
    work.mutationSerial = mutationSerial
    if work.wanted == nil { work.pendingSince = loop.clock.now }
    work.wanted = wanted
    onMutation?(key, .accepted(wanted))
    if let settled { work.settleWaiters.append(settled) }
    intentLog?.record(key, wanted: wanted)
    record.following = wanted
    records[key] = record
    changed(key)
    if work.inFlight == nil && waitingForCredentials.contains(key) {
      // Without credentials a call would only be refused again: the new intent waits
      // in place of the old one, unless the backend already has what it asks for;
      // a caller awaiting it is answered now, as the first one was.
      if !backendHas(key, wanted) { onMutation?(key, .outcome(.waiting, credentialsFailure(key))) }
      if backendHas(key, wanted) {
        settle(key, work)
      } else if settled != nil {
        let answer = SettleFailure(failure: credentialsFailure(key), state: state(key))
        let waiters = work.settleWaiters
        work.settleWaiters = []
        for waiter in waiters { waiter(.failure(answer)) }
      }
    } else if work.inFlight == nil {
      if let timer = work.retryTimer, backendHas(key, wanted) {
        // A toggle back to the confirmed state while a retry waited: nothing to send.
        loop.cancel(timer)
        work.retryTimer = nil
        settle(key, work)
      } else if work.retryTimer == nil {
        send(key, work)
      }
    }
    return state(key)
  }

  private func send(_ key: EntityKey, _ work: Activity) {
    guard let wanted = work.wanted else { return }
    // A call made before its intent is durable would reach the API even when the
    // commit then fails and the mutation is refused: it waits for the commit.
    if !backend.commitsWithIntents, let intentLog, !intentLog.isDurable(key) {
      if !work.awaitsCommit {
        work.awaitsCommit = true
        sendsAwaitingCommit.append((key, work))
      }
      return
    }
    work.inFlight = wanted
    work.callsSent &+= 1
    onMutation?(key, .sent)
    counters.backendCalls += 1
    counters.backendMutations += 1
    let epoch = environmentEpoch
    backend.setFollowing(key, wanted) { [lifetime, unowned self] result in
      guard !lifetime.ended, self.environmentEpoch == epoch else { return }
      self.mutationReturned(key, sent: wanted, result)
    }
  }

  private func mutationReturned(_ key: EntityKey, sent: Bool, _ result: Result<FollowAnswer, FollowFailure>) {
    guard let work = activities[key] else { return }
    work.inFlight = nil
    switch result {
    case .success(let answer):
      work.attempt = 0
      work.uncertain = false
      if !waitingForCredentials.isEmpty { waitingForCredentials.remove(key) }
      var record = records[key] ?? freshRecord
      record.confirm(answer)
      record.confirmedAt = loop.clock.now
      records[key] = record
      forgetError(key)
      onConfirmed?(key)
      if work.wanted.map({ backendHas(key, $0) }) ?? true {
        settle(key, work)
      } else {
        // A newer intent arrived while this call was in flight.
        changed(key)
        send(key, work)
      }
    case .failure(let failure):
      let policy = kindPolicies.isEmpty ? policy : kindPolicies[key.kind] ?? policy
      if failure.isRetryable { work.uncertain = true }
      // A wait the API asks for beyond the longest the policy allows is reported at
      // once (with the time left) rather than holding the caller that long.
      let beyondBudget = failure.retryAfter.map { $0 > .milliseconds(policy.maxWaitMs) } ?? false
      if failure.isRetryable
        && ((work.attempt < policy.maxRetries && !beyondBudget) || policy.whenExhausted == .keepQueued)
      {
        work.attempt += 1
        counters.retries += 1
        let delay = policy.delay(attempt: work.attempt, retryAfter: failure.retryAfter, random: &random)
        Log.debug("\(key): \(failure.message); retry \(work.attempt) in \(delay)")
        work.retryTimer = loop.schedule(after: delay) { [lifetime, unowned self, weak work] in
          guard !lifetime.ended, let work else { return }
          work.retryTimer = nil
          if let wanted = work.wanted, self.backendHas(key, wanted) {
            self.settle(key, work)
          } else {
            self.send(key, work)
          }
        }
        return
      }
      if case .unauthorized = failure.kind, policy.whenUnauthorized == .waitForCredentials {
        return waitForCredentials(key, work, failure)
      }
      if let wanted = work.wanted, wanted != sent {
        // The failed call was for an intent that a newer one replaced: the newer one
        // is still owed, unless it equals what the backend already has.
        work.attempt = 0
        if backendHas(key, wanted) { settle(key, work) } else { send(key, work) }
        return
      }
      rollBack(key, work, failure, retries: failure.isRetryable ? work.attempt : nil)
    }
  }

  /// The intent stays pending and durable with the -32003 error shown, so a UI can say
  /// "sign in to follow"; awaiting callers are answered now (the wait could be long).
  private func waitForCredentials(_ key: EntityKey, _ work: Activity, _ failure: FollowFailure) {
    work.attempt = 0
    guard work.wanted != nil else { return dropIfIdle(key, work) }
    if let wanted = work.wanted, backendHas(key, wanted) { return settle(key, work) }
    startsWaitingForCredentials(key, failure, read: false)
    waitingForCredentials.insert(key)
    onMutation?(key, .outcome(.waiting, failure))
    showAndAnswer(key, work, failure: failure)
  }

  /// Why the intent of `key` waits: the refusal it met, unless a read answered since
  /// and took the error away.
  func credentialsFailure(_ key: EntityKey) -> FollowFailure {
    if let failure = errors[key]?.failure, case .unauthorized = failure.kind { return failure }
    return FollowFailure(.unauthorized(status: 401), "the intent waits for credentials (configure authToken)")
  }

  /// Credentials changed (`configure {authToken}`, another environment): every intent
  /// and read that was refused for want of them is sent again.
  public func credentialsChanged() {
    if !waitingForCredentials.isEmpty || !readsWaitingForCredentials.isEmpty {
      Log.event(
        .info, "credentials.resume", "credentials changed: what waited for them is sent again",
        [.init("intents", waitingForCredentials.count), .init("reads", readsWaitingForCredentials.count)])
    }
    let intents = waitingForCredentials
    waitingForCredentials.removeAll()
    for key in intents.sorted() {
      guard let work = activities[key], work.wanted != nil, work.inFlight == nil, work.retryTimer == nil else {
        continue
      }
      Log.debug("\(key): credentials changed; sending the waiting intent again")
      send(key, work)
    }
    let reads = readsWaitingForCredentials
    readsWaitingForCredentials.removeAll()
    for key in reads.sorted() { fetch(key) }
  }

  /// The intent of `key` could not be made durable (a full disk), so it was never
  /// accepted: the entity goes back to the intent on disk (`durable`; nil for none),
  /// showing `failure`, and callers awaiting the unsaved intent are answered with it.
  public func intentNotSaved(_ key: EntityKey, durable: Bool?, failure: FollowFailure) {
    guard let work = activities[key], work.wanted != nil else { return }
    // Never accepted: refused, whatever the failure (the intent on disk, if any, is owed again).
    onMutation?(key, .outcome(.refused, failure))
    guard let durable else { return finishMutation(key, work, failure: failure) }
    work.wanted = durable
    onMutation?(key, .accepted(durable))
    records[key, default: Record()].following = durable
    showAndAnswer(key, work, failure: failure)
    guard work.inFlight == nil, work.retryTimer == nil, !waitingForCredentials.contains(key) else { return }
    if backendHas(key, durable) { settle(key, work) } else { send(key, work) }
  }

  /// The intent log's commit ended (after `intentNotSaved` for what it took back):
  /// the calls that waited for it go out, for the intents that are durable now.
  public func sendCommittedIntents() {
    guard !sendsAwaitingCommit.isEmpty else { return }
    let waiting = sendsAwaitingCommit
    sendsAwaitingCommit.removeAll()
    for (key, work) in waiting {
      work.awaitsCommit = false
      guard let wanted = work.wanted, activities[key] === work, work.inFlight == nil, work.retryTimer == nil,
        !waitingForCredentials.contains(key)
      else { continue }
      if backendHas(key, wanted) { settle(key, work) } else { send(key, work) }
    }
  }

  /// Another environment is active (the intent log already lists its intents): what
  /// was known in the old one says nothing here. Every entity's state becomes unknown
  /// (with a new version, so subscribers see it) and is read again here when asked;
  /// calls under way in the old environment are dropped unheard, their intents stay in
  /// the log for it, callers awaiting them are answered with `awaitFailure`, waiting
  /// reads are read again here, and this environment's own intents are sent.
  public func environmentChanged(awaitFailure: FollowFailure) {
    environmentEpoch += 1
    let old = activities
    activities.removeAll()
    errors.removeAll()
    readErrors.removeAll()
    attributes.removeAll()
    waitingForCredentials.removeAll()
    readsWaitingForCredentials.removeAll()
    for key in records.keys.sorted() {
      records[key]!.bits = 0
      records[key]!.confirmedAt = LoopInstant(nanoseconds: 0)
      changed(key)
    }
    for (key, work) in old.sorted(by: { $0.key < $1.key }) {
      if let timer = work.retryTimer { loop.cancel(timer) }
      let current = state(key)
      for waiter in work.settleWaiters { waiter(.failure(SettleFailure(failure: awaitFailure, state: current))) }
      for waiter in work.readWaiters { read(key, refresh: true, maxAgeMs: 0, completion: waiter) }
    }
    replayIntents()
  }

  /// What the backend answered for entities of `kinds` was read through a value that
  /// changed (`{me}`: another account): it says nothing now. Each one's confirmed state
  /// and attributes become unknown (a new version, so subscribers see it) and are read
  /// again when asked; a pending intent stays and is sent, nothing being known to hold
  /// it. Calls under way were asked with the old value: the backend asks them again.
  public func valuesChanged(kinds: Set<String>) {
    guard !kinds.isEmpty else { return }
    for key in records.keys.sorted(by: { ($0.kind, $0.id) < ($1.kind, $1.id) }) where kinds.contains(key.kind) {
      var record = records[key]!
      record.confirmed = nil
      record.requested = false
      record.isStale = false
      record.following = activities[key]?.wanted
      record.confirmedAt = LoopInstant(nanoseconds: 0)
      records[key] = record
      if !attributes.isEmpty { attributes.removeValue(forKey: key) }
      changed(key)
    }
  }

  /// Intents refused for want of credentials, waiting for `credentialsChanged()`.
  public var waitingForCredentialsCount: Int { waitingForCredentials.count }

  /// The wanted state is confirmed: no longer pending.
  private func settle(_ key: EntityKey, _ work: Activity) {
    finishMutation(key, work, failure: nil)
  }

  /// Shows what the backend last confirmed again — never the opposite of the failed
  /// call, which would clobber a state the user never asked to leave.
  private func rollBack(_ key: EntityKey, _ work: Activity, _ failure: FollowFailure, retries: Int?) {
    counters.rollbacks += 1
    logRollback(key, wanted: work.wanted, failure, retries: retries)
    finishMutation(key, work, failure: failure)
    // A refusal may mean that "confirmed" is wrong: an unfollow that was done but whose
    // answer was lost (or that another device or a killed run did) is refused with 404
    // "not followed", and only a read shows that the backend has what the user asked for.
    if records[key]?.confirmed == nil || work.uncertain || !failure.isRetryable {
      let checking = activity(key)
      checking.readChecksRollback = records[key]?.confirmed != nil
      // Until the check answers, "confirmed" is a guess: no read answers it from memory,
      // and an intent equal to it is still sent.
      checking.uncertain = true
      fetch(key)
    }
  }

  /// Whether the backend is known to hold `wanted` for `key`, so nothing need be sent.
  /// A follow request awaiting approval is what a follow can achieve until the other
  /// side approves: following it again would only get the same answer, so it settles
  /// a follow (and only an unfollow, which withdraws it, changes it).
  private func backendHas(_ key: EntityKey, _ wanted: Bool) -> Bool {
    guard let record = records[key], !record.isStale, activities[key]?.uncertain != true else { return false }
    return record.requested ? wanted : record.confirmed == wanted
  }

  /// Ends the entity's pending mutation either way: the shown state becomes the
  /// confirmed one, the outbox forgets the intent, and awaiting callers are answered.
  private func finishMutation(_ key: EntityKey, _ work: Activity, failure: FollowFailure?) {
    if work.wanted != nil { reportFinished(key, failure: failure) }
    work.wanted = nil
    work.attempt = 0
    if !waitingForCredentials.isEmpty { waitingForCredentials.remove(key) }
    intentLog?.record(key, wanted: nil)
    var record = records[key] ?? freshRecord
    record.following = record.confirmed
    records[key] = record
    showAndAnswer(key, work, failure: failure)
    dropIfIdle(key, work)
  }

  /// One version step for the new state (with the failure as its `error`), then every
  /// caller awaiting the mutation is answered with that state.
  private func showAndAnswer(_ key: EntityKey, _ work: Activity, failure: FollowFailure?) {
    if let failure {
      errors[key] = ShownFailure(failure: failure, at: loop.clock.now)
      readErrors.remove(key)
    }
    changed(key)
    let current = state(key)
    let waiters = work.settleWaiters
    work.settleWaiters = []
    for waiter in waiters {
      waiter(failure.map { .failure(SettleFailure(failure: $0, state: current)) } ?? .success(current))
    }
  }

  // MARK: Reads

  /// The state of `key`, from memory when it is confirmed and younger than
  /// `maxAgeMs`, else after one backend read shared by every concurrent caller.
  public func read(_ key: EntityKey, refresh: Bool = false, maxAgeMs: UInt64, completion: @escaping Completion) {
    if !refresh, let state = cachedState(key, maxAgeMs: maxAgeMs) { return completion(.success(state)) }
    readFromBackend(key, completion: completion)
  }

  /// The state `read` answers from memory (and counts as a cache hit), or nil when it
  /// would ask the backend. For a caller that answers at once: no completion is made.
  public func cachedState(_ key: EntityKey, maxAgeMs: UInt64) -> EntityState? {
    var found: EntityState?
    _ = withCachedState(key, maxAgeMs: maxAgeMs) { found = copy $0 }
    return found
  }

  /// The same, lent to `body`; false, and `body` not called, when it would ask the
  /// backend. For the cached read: an optional state returned was destroyed through the
  /// runtime's generic code.
  public func withCachedState(
    _ key: EntityKey, maxAgeMs: UInt64, acceptsStale: Bool = false, _ body: (borrowing EntityState) -> Void
  ) -> Bool {
    guard let record = records[key], record.confirmed != nil,
      loop.clock.now.isWithin(milliseconds: maxAgeMs, of: record.confirmedAt) || (acceptsStale && record.isStale),
      activities.isEmpty || activities[key]?.uncertain != true
    else { return false }
    counters.cacheHits += 1
    body(state(key, record))
    // A state from the last run is answered at once, and asked of the backend again.
    if record.isStale { fetch(key) }
    return true
  }

  /// The second half of `read`: one backend read shared by every concurrent caller.
  public func readFromBackend(_ key: EntityKey, completion: @escaping Completion) {
    let work = activity(key)
    work.readWaiters.append(completion)
    if work.readInFlight {
      counters.dedupeHits += 1
      return
    }
    startRead(key, work)
  }

  /// Fetches `key` if nothing is known of it and no read is under way (as the follow
  /// button's model does when it is created); the result arrives through `onChange`.
  public func fetchIfUnknown(_ key: EntityKey) {
    // A state from the last run counts as unknown: it is shown, and asked again.
    if let record = records[key], record.confirmed != nil, !record.isStale { return }
    fetch(key)
  }

  private func fetch(_ key: EntityKey) {
    let work = activity(key)
    if !work.readInFlight { startRead(key, work) }
  }

  private func startRead(_ key: EntityKey, _ work: Activity) {
    work.readInFlight = true
    work.readSince = loop.clock.now
    work.readStartedAt = work.mutationSerial
    work.readStartedCalls = work.callsSent
    work.readOverlapsCall = work.inFlight != nil
    counters.backendCalls += 1
    counters.backendReads += 1
    let epoch = environmentEpoch
    // The answer comes back to `work` itself: an activity with a read under way is never
    // dropped (it is not idle), and only another environment (a new epoch) replaces the
    // table, so looking it up again by the key (a hash) would find this one.
    backend.fetchFollowing(key) { [lifetime, unowned self] result in
      guard !lifetime.ended, self.environmentEpoch == epoch else { return }
      self.readReturned(key, work, result)
    }
  }

  private func readReturned(_ key: EntityKey, _ work: Activity, _ result: Result<FollowAnswer, FollowFailure>) {
    work.readInFlight = false
    let waiters = work.readWaiters
    work.readWaiters = Waiters()
    switch result {
    case .success(let answer):
      // The state the change notified is the one the waiters get: made once, where
      // making it again took two more lookups of the key.
      var shown: EntityState?
      if !readsWaitingForCredentials.isEmpty { readsWaitingForCredentials.remove(key) }
      // A read that started before the latest mutation, or overlaps one in flight,
      // may describe the backend before that mutation: it must not become `confirmed`.
      let stale =
        work.readStartedAt != work.mutationSerial || work.inFlight != nil || work.readOverlapsCall
        || work.readStartedCalls != work.callsSent
      if !stale {
        work.uncertain = false
        let index = recordIndex(key)
        let before = records.values[index]
        var record = before
        record.confirm(answer)
        record.confirmedAt = loop.clock.now
        if work.wanted == nil { record.following = answer.following }
        records.values[index] = record
        // An intent waiting for credentials keeps why it waits, whatever a read says:
        // its state stays the -32003 error clients show as "sign in to follow".
        let keepsReason =
          (work.readChecksRollback && before.bits == record.bits && !readErrors.contains(key))
          || (work.wanted != nil && !waitingForCredentials.isEmpty && waitingForCredentials.contains(key))
        let hadError = !keepsReason && forgetError(key)
        if before.bits != record.bits || hadError { shown = changed(key, at: index, pending: work.wanted != nil) }
      }
      work.readChecksRollback = false
      work.checkAttempt = 0
      let current = shown ?? state(key)
      for waiter in waiters { waiter(.success(current)) }
    case .failure(let failure):
      let wasCheck = work.readChecksRollback
      work.readChecksRollback = false
      if wasCheck && failure.isRetryable { retryCheck(key, work, failure) }
      if records[key] == nil {
        records[key] = freshRecord
        keepBounded()
      }
      if case .unauthorized = failure.kind {
        if !readsWaitingForCredentials.contains(key) { startsWaitingForCredentials(key, failure, read: true) }
        readsWaitingForCredentials.insert(key)
      } else if errors[key].map({ !Self.sameFailure($0.failure, failure) }) ?? true {
        logFailedRead(key, failure)
      }
      if errors[key] == nil || readErrors.contains(key) {
        errors[key] = ShownFailure(failure: failure, at: loop.clock.now)
        readErrors.insert(key)
        changed(key)
      }
      let current = state(key)
      for waiter in waiters { waiter(.failure(SettleFailure(failure: failure, state: current))) }
    }
    dropIfIdle(key, work)
  }

  /// The read that checks a rollback failed transiently: without it the shown state may
  /// stay what the backend no longer holds (an unfollow done, its answer lost, then
  /// refused as "not followed"), so it is tried again with the retry policy's backoff.
  private func retryCheck(_ key: EntityKey, _ work: Activity, _ failure: FollowFailure) {
    let policy = kindPolicies.isEmpty ? policy : kindPolicies[key.kind] ?? policy
    guard work.checkAttempt < policy.maxRetries, work.checkTimer == nil else {
      if work.checkTimer == nil { logGaveUpCheck(key, failure, attempts: work.checkAttempt) }
      work.checkAttempt = 0
      return
    }
    work.checkAttempt += 1
    let delay = policy.delay(attempt: work.checkAttempt, retryAfter: failure.retryAfter, random: &random)
    work.checkTimer = loop.schedule(after: delay) { [lifetime, unowned self, weak work] in
      guard !lifetime.ended, let work else { return }
      work.checkTimer = nil
      work.readChecksRollback = self.records[key]?.confirmed != nil
      self.fetch(key)
    }
  }

  // MARK: Bookkeeping

  private func activity(_ key: EntityKey) -> Activity {
    // Through the subscripts with a default, which insert what they make: one hash of
    // the key per table for a new entity, where a lookup and then an insertion took two.
    var created = false
    func make() -> Activity {
      created = true
      return Activity()
    }
    let work = Self.inserted(&activities[key, default: make()])
    guard created else { return work }
    _ = Self.inserted(&records[key, default: freshRecord])
    keepBounded()
    return work
  }

  /// What a default subscript holds once accessed for change (inserted when missing).
  @inline(__always)
  private static func inserted<T>(_ value: inout T) -> T { value }

  /// Drops the entity's `error`; true when it had one. The side tables are empty in
  /// the common case, and asking an empty one is cheaper than hashing the key.
  @discardableResult
  private func forgetError(_ key: EntityKey) -> Bool {
    if !readErrors.isEmpty { readErrors.remove(key) }
    return !errors.isEmpty && errors.removeValue(forKey: key) != nil
  }

  private func dropIfIdle(_ key: EntityKey, _ work: Activity) {
    if work.isIdle, let index = activities.index(forKey: key), activities.values[index] === work {
      activities.remove(at: index)
    }
  }

  /// Where `key`'s record is, made fresh when there is none: one lookup to read and
  /// change it in place, where `records[key]` and `records[key] = …` take two.
  private func recordIndex(_ key: EntityKey) -> [EntityKey: Record].Index {
    if let index = records.index(forKey: key) { return index }
    records[key] = freshRecord
    return records.index(forKey: key)!
  }

  /// Every change of state goes through here: one version step, one notification.
  private func changed(_ key: EntityKey) {
    changed(key, at: recordIndex(key), pending: activities.isEmpty ? false : activities[key]?.wanted != nil)
  }

  /// `index` is where `key`'s record is, found by the caller with no record added or
  /// removed since: a read's answer changes the record it just looked up.
  /// `pending` is whether the entity's activity wants a value. Returns the state notified.
  @discardableResult
  private func changed(_ key: EntityKey, at index: [EntityKey: Record].Index, pending: Bool) -> EntityState {
    records.values[index].version = versions.next()
    keepBounded()  // only queues an eviction: `index` still holds
    records.values[index].touched = tick
    let current = state(key, records.values[index], pending: pending)
    onChange?(current)
    return current
  }
}
