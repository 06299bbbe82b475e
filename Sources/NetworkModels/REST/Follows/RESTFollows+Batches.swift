import EventLoop
import HTTP
import JSON

/// Reads of a kind whose state endpoint takes many ids, gathered into one call.
extension RESTFollows {
  /// Reads of one kind waiting to go out as one call.
  final class PendingBatch {
    var ids: [String] = []
    /// By bytes: `caf\u{E9}` and `cafe\u{301}` are two ids of the batch (`ExactString`).
    var waiters: [ExactString: [Completion]] = [:]
    var timer: EventLoop.TimerID?
    var priority = HTTPPriority.preload
  }

  func enqueue(_ key: EntityKey, _ batch: RESTConfiguration.Batch, _ completion: @escaping Completion) {
    let pending = batches[key.kind] ?? PendingBatch()
    batches[key.kind] = pending
    let id = ExactString(key.id)
    if pending.waiters[id] == nil { pending.ids.append(key.id) }
    pending.waiters[id, default: []].append(completion)
    pending.priority = max(pending.priority, session.readPriority)
    if pending.ids.count >= batch.maxIds {
      flush(kind: key.kind)
    } else if pending.timer == nil {
      pending.timer = session.loop.schedule(after: .milliseconds(batch.windowMs)) { [weak self] in
        self?.flush(kind: key.kind)
      }
    }
  }

  private func flush(kind: String) {
    guard let pending = batches.removeValue(forKey: kind), let endpoints = session.configuration.kinds[kind],
      let batch = endpoints.state.batch
    else { return }
    if let timer = pending.timer { session.loop.cancel(timer) }
    let state = endpoints.state.endpoint
    session.count(kind, "state")
    var call = session.request(state, values: ["kind": kind], ids: pending.ids, join: batch.join)
    if pending.priority == .user { call.maxHoldWait = session.maxHoldWait(kind: kind) }
    let world = session.world
    session.send(call, state, priority: pending.priority) { [weak self] result in
      guard let self else { return }
      guard self.session.world == world else {
        for id in pending.ids {
          for waiter in pending.waiters[ExactString(id)] ?? [] {
            self.session.answeredInOldWorld(world, waiter) {
              self.fetchFollowing(EntityKey(kind: kind, id: id), completion: waiter)
            }
          }
        }
        return
      }
      // A status meaning answers for every id of the call: Artsy's batched check
      // answers 404 when none of them is followed (see examples/artsy/ENDPOINTS.md).
      let answers = self.batchOutcome(result, state, batch, ids: pending.ids, kind: kind)
      for id in pending.ids {
        let answer = answers(id)
        if case .success(.notFollowing) = answer, self.session.capturedValues.count > 0 {
          self.session.forgetCaptures(EntityKey(kind: kind, id: id))
        }
        for waiter in pending.waiters[ExactString(id)] ?? [] { waiter(answer) }
      }
    }
  }

  /// Another environment is active: the reads of a batch not yet sent belong to the
  /// old one (RESTSession+World).
  func failPendingBatches() {
    let pending = batches
    batches.removeAll()
    for (_, batch) in pending {
      if let timer = batch.timer { session.loop.cancel(timer) }
      let failure = session.droppedWithEnvironment
      session.loop.execute {
        for id in batch.ids {
          for waiter in batch.waiters[ExactString(id)] ?? [] { waiter(.failure(failure)) }
        }
      }
    }
  }
}
