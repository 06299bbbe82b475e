// One `subscribe`: its states as 'change' events and as an async iterator.

import { EventEmitter } from 'node:events';
import { emitSafely } from './events.js';
import { StateStore, stateKey } from './state.js';

export class Subscription extends EventEmitter {
  #client;
  #store = new StateStore();
  // Undelivered states for the iterator, one per entity/list: a newer state replaces
  // the waiting one in place (as the server coalesces), so memory stays bounded by the
  // number of entities, however slowly the consumer iterates.
  #queue = new Map();
  #waiters = [];
  #closed = false;
  #error = null;
  // 'change' events held until the code awaiting subscribe() has run: the states that
  // come with its reply are read in the same I/O callback, before any listener exists.
  #held = [];
  #heldStats = null;
  #heldMutations = [];

  constructor(client, id, topics, snapshot, instance) {
    super();
    this.#client = client;
    /** The server's name for this subscription; a new one after each reconnect. */
    this.id = id;
    /** The topics, as sent; re-sent after a reconnect. */
    this.topics = topics;
    /** The states `subscribe` answered with (the latest answer, after a reconnect). */
    this.snapshot = snapshot;
    /** The `seq` of the last notification delivered (0 after a reconnect's snapshot). */
    this.lastSeq = 0;
    /** The server process's `instance` id when last subscribed (undefined if not named). */
    this.instance = instance;
    /** The newest figures of a `stats` topic (null before the first). */
    this.stats = null;
    /**
     * The version up to which this view has every change (the subscribe answer's
     * `version`, then each `through` of the connection): a reconnect resumes from it
     * (`since`), getting only what changed while away. Undefined until the server says.
     */
    this.resumeVersion = undefined;
    // The snapshot starts the stream, in every client (README, "the subscribe snapshot"):
    // iterators and 'change' listeners get it first (listeners once held ones are let go).
    for (const s of snapshot) this._deliver(s);
    // Listeners added or removed change whether the client holds the event loop open.
    const hold = () => client._hold();
    this.on('newListener', hold);
    this.on('removeListener', hold);
    setImmediate(() => {
      const held = this.#held;
      this.#held = null;
      for (const [state, seq] of held) this.emit('change', state, seq);
      const stats = this.#heldStats;
      this.#heldStats = null;
      if (stats) this.emit('stats', ...stats);
      const mutations = this.#heldMutations;
      this.#heldMutations = null;
      for (const [entry, seq] of mutations) this.emit('mutation', entry, seq);
    });
  }

  get closed() {
    return this.#closed;
  }

  /** Whether something waits on it (an iterator, a 'change' listener): the client then holds Node's event loop open. */
  _waitedOn() {
    return (
      !this.#closed &&
      (this.#waiters.length > 0 ||
        this.listenerCount('change') > 0 ||
        this.listenerCount('stats') > 0 ||
        this.listenerCount('mutation') > 0)
    );
  }

  /** The newest state held per entity or list, snapshot included. */
  get states() {
    return this.#store.values();
  }

  /** The newest state held for one entity. */
  state(kind, id) {
    return this.#store.get({ kind, id });
  }

  /** The newest state held for one list. */
  list(list, params = {}) {
    return this.#store.get({ list, params });
  }

  unsubscribe() {
    return this.#client.unsubscribe(this);
  }

  /** Same as unsubscribe(), resolving even when there is no connection to tell. */
  async close() {
    if (this.#closed) return;
    try {
      await this.unsubscribe();
    } catch (error) {
      if (error?.name !== 'ConnectionLostError') throw error; // the server ended it with the connection
    }
  }

  /** `await using sub = await nm.subscribe(…)` unsubscribes at the end of the block. */
  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.close();
  }

  /** Like EventEmitter's, but a listener that throws (or rejects) cannot break the client or crash the process. */
  emit(event, ...args) {
    return emitSafely(this, this.#client, event, args);
  }

  // -- called by the client ------------------------------------------------------------

  /** Keeps and queues a state unless an equal or newer version is held; true if kept. */
  /** A `stats` push: no version, each is newer; only the newest waits for listeners. */
  _deliverStats(stats, seq = 0) {
    if (this.#closed) return false;
    if (seq) this.lastSeq = seq;
    this.stats = stats;
    if (this.#held) this.#heldStats = [stats, seq];
    else this.emit('stats', stats, seq);
    return true;
  }

  /** A `mutationOutcome` push: an entry of the ledger with its new outcome, each one an event. */
  _deliverMutation(entry, seq = 0) {
    if (this.#closed) return false;
    if (seq) this.lastSeq = seq;
    if (this.#heldMutations) this.#heldMutations.push([entry, seq]);
    else this.emit('mutation', entry, seq);
    return true;
  }

  _deliver(state, seq = 0) {
    if (this.#closed || stateKey(state) === undefined) return false;
    if (seq) this.lastSeq = seq;
    if (!this.#store.accept(state)) return false;
    this.#queue.set(stateKey(state), state);
    this.#wake();
    if (this.#held) this.#held.push([state, seq]);
    else this.emit('change', state, seq);
    return true;
  }

  /**
   * After a reconnect the server named the subscription anew and answered with a new
   * snapshot. Back on the same server process (same `instance`) the held versions
   * stand and the snapshot passes the usual filter; on another one (a restart, or a
   * server naming no instance), which may count lower, they are forgotten and the
   * snapshot is delivered as the current truth.
   */
  _resubscribed(id, snapshot, instance, version) {
    this.id = id;
    this.snapshot = snapshot;
    this.lastSeq = 0;
    if (instance === undefined || instance !== this.instance) {
      this.#store.clear();
      this.resumeVersion = undefined;
    }
    this.instance = instance;
    this._sawVersion(version);
    return snapshot.filter((s) => this._deliver(s));
  }

  _sawVersion(version) {
    if (Number.isSafeInteger(version) && version >= (this.resumeVersion ?? 0)) this.resumeVersion = version;
  }

  /** Where a reconnect resumes this view (`subscribe`'s `since`); undefined before the server said both. */
  _since() {
    if (this.instance === undefined || this.resumeVersion === undefined) return undefined;
    return { instance: this.instance, version: this.resumeVersion };
  }

  _close(error = null) {
    if (this.#closed) return;
    this.#closed = true;
    this.#error = error;
    this.#wake();
    this.emit('end', error);
    this.#client._hold();
  }

  #wake() {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  // -- async iterator ------------------------------------------------------------------

  /**
   * `for await (const state of sub)`: every new state from the subscription's start,
   * oldest entity first. All iterators of one subscription share one queue (so states
   * that arrive before the loop starts are not lost); use 'change' events to fan out.
   * Ends after unsubscribe()/close(); throws ConnectionLostError if the connection is
   * lost for good.
   */
  [Symbol.asyncIterator]() {
    return {
      next: async () => {
        for (;;) {
          if (this.#queue.size) {
            const [key, state] = this.#queue.entries().next().value;
            this.#queue.delete(key);
            return { value: state, done: false };
          }
          if (this.#closed) {
            if (this.#error) {
              const error = this.#error;
              this.#error = null; // thrown once; later calls just end
              throw error;
            }
            return { value: undefined, done: true };
          }
          await new Promise((resolve) => {
            this.#waiters.push(resolve);
            this.#client._hold();
          });
          this.#client._hold();
        }
      },
      // `break` out of a loop ends that loop only; the subscription stays open.
      return: async () => ({ value: undefined, done: true }),
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }
}
