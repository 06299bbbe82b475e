// The client: one JSON-RPC connection (a spawned `netmodel serve` over stdio, or a
// Unix socket, reconnected after a drop) speaking newline-delimited JSON.

import { spawn as spawnProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { ClientErrorCodes, ConnectionLostError, ErrorCodes, RPCError } from './errors.js';
import { emitSafely } from './events.js';
import { LineSplitter } from './lines.js';
import { defaultSocketPath, mutationFailed, stateKey, topic, withHelpers } from './state.js';
import { Subscription } from './subscription.js';
import { checkSocketFolder } from './trust.js';

/** A request's `timeout` elapsed; `$/cancelRequest` was sent for it. */
export class TimeoutError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TimeoutError';
    this.code = 'NETMODEL_TIMEOUT';
  }

  /** ClientErrorCodes.Timeout. */
  get rpcCode() {
    return ClientErrorCodes.Timeout;
  }
}

const RECONNECT_DEFAULTS = { initialDelayMs: 50, maxDelayMs: 2000, maxAttempts: Infinity };

// Spawned servers still running. What guarantees no orphan is the server's exit on EOF
// on its stdin, which the kernel gives it however this process ends (even SIGKILL:
// no hook runs then). On an ordinary exit this hook also SIGTERMs them, a second line
// should the pipe's write end have leaked into another process.
const children = new Set();
let exitHookInstalled = false;
function trackChild(child) {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const c of children) c.kill('SIGTERM');
    });
  }
  children.add(child);
  child.once('exit', () => children.delete(child));
}

export class NetmodelClient extends EventEmitter {
  #conn = null; // { write(line), end(), destroy() } of the current connection
  #pending = new Map(); // id → { method, resolve, reject, onResult, cleanup, conn }
  #subs = new Map(); // server's subscription name → Subscription (current connection)
  #live = new Set(); // subscriptions to restore after a reconnect
  #nextId = 0;
  #state = 'open'; // 'open' | 'reconnecting' | 'closing' | 'closed'
  #reconnect; // options, or null when a drop is final
  #reconnectTimer = null;
  #configured = null; // last configure params, replayed after a reconnect
  #closed; // resolves once close() finished
  #abandoned = new Set(); // ids of subscribes given up before their answer (this connection)
  #early = new Map(); // subscription name → Map(state key → [state, seq]) come before its answer
  #handles = []; // what holds Node's event loop open: the socket, or the child and its pipes
  #held = null; // whether they are ref'd now (null: not set yet)
  #holdQueued = false;
  #answered = false; // the server wrote something: it started
  #stderrTail = ''; // a spawned server's last words (spawn's default stderr)

  /** Use NetmodelClient.spawn() or NetmodelClient.connect(). */
  constructor({ process: child = null, socketPath = null, timeout, reconnect = null } = {}) {
    super();
    /** The spawned server's ChildProcess, or null for a socket connection. */
    this.process = child;
    /** The socket's path, or null for a spawned server. */
    this.socketPath = socketPath;
    /** Default timeout (ms) of every request; undefined waits forever. */
    this.timeout = timeout;
    /**
     * The server process's `instance` id (from initialize, subscribe and stats answers);
     * another one after a reconnect means the server restarted. Undefined until seen.
     */
    this.instance = undefined;
    this.#reconnect = reconnect;
  }

  /**
   * Start `BIN serve ARGS…` as a child speaking on its stdin/stdout. `bin` defaults to
   * $NETMODEL_BIN, else `netmodel` on PATH; `stderr` is where its logs go ('inherit',
   * 'ignore', 'pipe' or a stream/fd).
   */
  static async spawn({ bin, args = [], env, cwd, stderr = 'inherit', timeout } = {}) {
    if (args.includes('--no-stdio')) {
      throw new TypeError('spawn() talks over stdio; --no-stdio would leave it deaf (use --socket alongside stdio)');
    }
    // By default its logs still reach our stderr, through a pipe whose last lines
    // explain an exit ("never started (exit code 1): … in use").
    const forward = stderr === 'inherit';
    const child = spawnProcess(bin ?? process.env.NETMODEL_BIN ?? 'netmodel', ['serve', ...args], {
      env,
      cwd,
      stdio: ['pipe', 'pipe', forward ? 'pipe' : stderr],
    });
    await new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject); // ENOENT and the like
    });
    child.on('error', () => {}); // a failed kill(); exit and stdout 'close' tell the rest
    trackChild(child);
    const client = new NetmodelClient({ process: child, timeout });
    child.stdin.on('error', () => {}); // EPIPE once the child died; the read side reports it
    client.#handles = [child, child.stdin, child.stdout, child.stderr].filter((h) => h && typeof h.unref === 'function');
    if (forward) {
      child.stderr.on('data', (chunk) => {
        process.stderr.write(chunk);
        client.#stderrTail = (client.#stderrTail + chunk.toString('utf8')).slice(-2000);
      });
    }
    client.#attach(child.stdout, {
      write: (line) => child.stdin.write(line),
      end: () => child.stdin.end(),
      destroy: () => child.stdin.destroy(),
    });
    return client;
  }

  /**
   * Connect to a running server's Unix socket (default: defaultSocketPath()). After a
   * drop the client reconnects with backoff unless `reconnect` is false; pass an
   * object to tune { initialDelayMs, maxDelayMs, maxAttempts }.
   */
  static async connect({ path, timeout, reconnect = true } = {}) {
    const socketPath = path ?? defaultSocketPath();
    const socket = await openSocket(socketPath);
    const options = reconnect === false ? null : { ...RECONNECT_DEFAULTS, ...(reconnect === true ? {} : reconnect) };
    const client = new NetmodelClient({ socketPath, timeout, reconnect: options });
    client.#attachSocket(socket);
    return client;
  }

  /**
   * The user's server: connect to the one listening on `path` (default
   * defaultSocketPath()), else spawn one (`bin`, `args`, `env`, `cwd`, `stderr` as for
   * spawn()) that also listens there, so other clients share it rather than fail on its
   * state folder. `spawned` says which happened. Only "nobody listens" (no socket file,
   * or a stale one) spawns: an UntrustedSocketError rejects as connect() does. Should
   * another client start a server meanwhile, ours cannot take the state folder or the
   * socket and exits: that one is connected to instead.
   */
  static async connectOrSpawn({ path, timeout, reconnect = true, bin, args = [], env, cwd, stderr } = {}) {
    const socketPath = path ?? defaultSocketPath();
    try {
      return await NetmodelClient.connect({ path: socketPath, timeout, reconnect });
    } catch (error) {
      if (!nobodyListens(error)) throw error;
    }
    const client = await NetmodelClient.spawn({ bin, args: [...args, `--socket=${socketPath}`], env, cwd, stderr, timeout });
    try {
      await client.initialize(); // a server that cannot start says why here
    } catch (failed) {
      await client.close().catch(() => {});
      if (!(failed instanceof ConnectionLostError)) throw failed;
      try {
        return await NetmodelClient.connect({ path: socketPath, timeout, reconnect });
      } catch (error) {
        if (!nobodyListens(error)) throw error;
        throw failed;
      }
    }
    return client;
  }

  /** Whether this client started its server (spawn()), rather than connected to a running one. */
  get spawned() {
    return this.process !== null;
  }

  get pid() {
    return this.process?.pid;
  }

  /** Like EventEmitter's, but a listener that throws (or rejects) cannot break the client or crash the process. */
  emit(event, ...args) {
    return emitSafely(this, this, event, args);
  }

  /** True while requests can be sent (false while reconnecting and after close). */
  get connected() {
    return this.#state === 'open';
  }

  // -- methods ---------------------------------------------------------------------------

  /**
   * Send any request and resolve with its result. Rejects with an RPCError (its
   * subclass for the code), a ConnectionLostError, a TimeoutError after `timeout` ms or
   * `signal.reason` on abort — the last two after telling the server `$/cancelRequest`.
   */
  call(method, params, options = {}) {
    if (this.#state !== 'open') return Promise.reject(this.#notConnected());
    return this.#request(method, params, options);
  }

  /** Send a notification (no reply). */
  notify(method, params) {
    if (this.#state !== 'open') throw this.#notConnected();
    this.#send(message(method, params));
  }

  async initialize(params = {}, options) {
    const clientInfo = { name: 'netmodel-client-node' };
    const result = await this.call('initialize', { processId: process.pid, clientInfo, ...params }, options);
    this.#sawInstance(result?.serverInfo);
    return result;
  }

  follow(kind, id, options = {}) {
    return this.call('follow', { kind, id, await: options.await || undefined }, options);
  }

  unfollow(kind, id, options = {}) {
    return this.call('unfollow', { kind, id, await: options.await || undefined }, options);
  }

  setFollowState(kind, id, following, options = {}) {
    return this.call('setFollowState', { kind, id, following, await: options.await || undefined }, options);
  }

  getFollowState(kind, id, options = {}) {
    const { refresh, maxAgeMs } = options;
    return this.call('getFollowState', { kind, id, refresh, maxAgeMs }, options);
  }

  /**
   * An entity's state with its `attributes`, loading its details (where the kind has a
   * detail endpoint) and follow state when not held yet, or again with `refresh`.
   */
  getEntity(kind, id, options = {}) {
    return this.call('getEntity', { kind, id, refresh: options.refresh || undefined }, options);
  }

  /**
   * Load a page of a list and resolve with its ListState: `page` 'first' (default),
   * 'next' (infinite scroll) or 'refresh' (pull to refresh); `params` fill the list's
   * placeholders and are part of its identity. A failed page resolves with
   * `state: 'failure'` and `error` set (the items kept); an unknown list rejects with
   * UnknownKindOrList.
   */
  fetchList(list, options = {}) {
    const { params, page } = options;
    return this.call('fetchList', { list, params, page }, options);
  }

  /**
   * Tell the server which items are near ('preload'), about to be ('display') or on
   * ('visible') screen, or gone ('none'), so it loads their states first. Takes
   * EntityRefs, or anything with `kind` and `id` (ListItems, EntityStates); resolves
   * with how many items the server accepted.
   */
  async setInterfaceState(items, state, options) {
    const refs = [...items].map(({ kind, id }) => ({ kind, id }));
    const result = await this.call('setInterfaceState', { items: refs, state }, options);
    return result.accepted;
  }

  async stats(options) {
    const result = await this.call('stats', undefined, options);
    this.#sawInstance(result);
    return result;
  }

  /** The items behind the counters (`inspect`): `params` is `{sections, kind, id, limit}`, all optional. */
  async inspect(params = {}, options) {
    const result = await this.call('inspect', params, options);
    this.#sawInstance(result);
    return result;
  }

  /**
   * Waits until every intent accepted before it has settled (`sync`): `{settled, waiting}`.
   * `params.timeoutMs` is the server's wait (default 10000); the request's own timeout,
   * unless `options.timeout` says otherwise, is that plus 10 s.
   */
  async sync(params = {}, options) {
    const timeout = options?.timeout ?? (params.timeoutMs ?? 10000) + 10000;
    return this.call('sync', params, { ...options, timeout });
  }

  /**
   * The server's ledger of intents and their outcomes (`getMutations`): `params` is
   * `{since, limit, kind, id}`, all optional; resolves with `{entries, next, last, more,
   * truncated}`. Pass `next` as the next `since`.
   */
  async getMutations(params = {}, options) {
    return this.call('getMutations', params, options);
  }

  /**
   * Every refused or rolled-back intent after `since`, page after page, and the seq to
   * pass next time: `{failed, next}`. What a client that reconnects tells its user
   * (`mutationMessage(entry)`: "your follow of artist/kaws failed: …").
   */
  async failedMutations(since = 0, options) {
    const failed = [];
    for (;;) {
      const page = await this.getMutations({ since, limit: 1000 }, options);
      failed.push(...page.entries.filter(mutationFailed));
      since = page.next;
      if (!page.more) return { failed, next: since };
    }
  }

  /** Set the backend environment and/or token (`authToken: null` forgets it). */
  async configure(params = {}, options) {
    const result = await this.call('configure', params, options);
    // A restarted server has forgotten it: kept to be sent again after a reconnect.
    const values = params.values ? { ...this.#configured?.values, ...params.values } : this.#configured?.values;
    this.#configured = { ...this.#configured, ...params, ...(values ? { values } : {}) };
    return result;
  }

  /** Subscribe to topics (objects, or shorthands such as "entity:artist/banksy"). */
  subscribe(topics, options = {}) {
    const list = (Array.isArray(topics) ? topics : [topics]).map(topic);
    return this.call('subscribe', { topics: list }, {
      ...options,
      // Runs in the reader, before any later line is dispatched, so no notification
      // of the new subscription can arrive before it is known.
      onResult: (result) => {
        const sub = new Subscription(this, result.subscription, list, result.snapshot ?? [], this.#sawInstance(result));
        sub._sawVersion(result.version);
        this.#subs.set(sub.id, sub);
        this.#live.add(sub);
        this._hold();
        this.#deliverEarly(sub);
        return sub;
      },
    });
  }

  /** End a subscription (a Subscription or its name); its iterators finish. */
  async unsubscribe(subscription, options) {
    const sub =
      subscription instanceof Subscription ? subscription : [...this.#live].find((s) => s.id === subscription);
    const name = sub ? sub.id : subscription;
    const wasLive = sub ? this.#live.delete(sub) : false;
    try {
      // While disconnected there is nothing to tell: the server ended it with the connection.
      if (!sub || (wasLive && this.#state === 'open')) await this.call('unsubscribe', { subscription: name }, options);
    } finally {
      if (sub) {
        this.#subs.delete(name);
        sub._close();
      }
    }
  }

  /**
   * End the connection. For a spawned server: `shutdown` and `exit`, wait up to
   * `timeout` ms, then SIGTERM and at last SIGKILL — it never outlives the client.
   */
  close({ timeout = 5000 } = {}) {
    this.#closed ??= this.#close(timeout);
    return this.#closed;
  }

  async #close(timeout) {
    if (this.#state === 'closed') return this.process && reap(this.process, timeout); // lost already
    const wasOpen = this.#state === 'open';
    this.#state = 'closing';
    clearTimeout(this.#reconnectTimer);
    const child = this.process;
    if (child) {
      if (wasOpen && child.exitCode === null && child.signalCode === null) {
        try {
          await this.#request('shutdown', undefined, { timeout: Math.min(timeout, 2000) });
          this.#send(message('exit'));
        } catch {
          // gone or hung already: the signals below handle it
        }
      }
      this.#conn?.end(); // EOF on stdin ends the server too
      await reap(child, timeout);
    } else if (this.#conn) {
      const conn = this.#conn;
      conn.end();
      if (!(await conn.closed(1000))) conn.destroy();
    }
    this.#lost(this.#conn, null);
  }

  // -- plumbing --------------------------------------------------------------------------

  #notConnected() {
    return this.#state === 'reconnecting'
      ? new ConnectionLostError('netmodel connection lost; reconnecting (not sent)', 'NETMODEL_NOT_CONNECTED')
      : new ConnectionLostError('netmodel client is closed', 'NETMODEL_CLOSED');
  }

  #request(method, params, { timeout = this.timeout, signal, onResult } = {}) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const id = ++this.#nextId;
      const conn = this.#conn;
      let timer;
      const giveUp = (error) => {
        if (!this.#pending.delete(id)) return;
        cleanup();
        // The server keeps working on it otherwise (an awaited mutation's wait, say).
        if (this.#conn === conn) {
          this.#trySend(message('$/cancelRequest', { id }));
          // Its answer may still come; that subscription is then unsubscribed.
          if (method === 'subscribe') this.#abandoned.add(id);
        }
        reject(error);
      };
      const onAbort = () => giveUp(signal.reason);
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this._hold(); // answered, failed or given up: maybe nothing waits any more
      };
      let line;
      try {
        line = encode({ jsonrpc: '2.0', id, ...message(method, params) });
      } catch (error) {
        return reject(error); // refused before anything is sent
      }
      this.#pending.set(id, { method, resolve, reject, onResult, cleanup, conn });
      this._hold();
      if (timeout != null) {
        timer = setTimeout(() => giveUp(new TimeoutError(`netmodel ${method} timed out after ${timeout} ms`)), timeout);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        this.#sendLine(line);
      } catch (error) {
        this.#pending.delete(id);
        cleanup();
        reject(error);
      }
    });
  }

  #send(msg) {
    this.#sendLine(encode(msg));
  }

  #sendLine(line) {
    if (!this.#conn) throw this.#notConnected();
    this.#conn.write(line);
  }

  #trySend(msg) {
    try {
      this.#send(msg);
    } catch {
      // best effort
    }
  }

  #attachSocket(socket) {
    socket.on('error', () => {}); // reported by 'close', handled in #lost
    this.#handles = [socket];
    this.#held = null;
    this.#attach(socket, {
      write: (line) => socket.write(line),
      end: () => socket.end(),
      destroy: () => socket.destroy(),
      closed: (ms) =>
        new Promise((resolve) => {
          if (socket.closed) return resolve(true);
          const t = setTimeout(() => resolve(false), ms);
          socket.once('close', () => {
            clearTimeout(t);
            resolve(true);
          });
        }),
    });
  }

  /**
   * Node's event loop is held open by the connection only while something waits on
   * the client: a request, an iterator awaiting its next state, a 'change' listener on
   * an open subscription (as a server's 'connection' listener does). Otherwise a script
   * that is done exits without close(); a spawned server then exits on EOF on its stdin.
   * Recomputed once per tick, after whatever changed it.
   */
  _hold() {
    if (this.#holdQueued) return;
    this.#holdQueued = true;
    queueMicrotask(() => {
      this.#holdQueued = false;
      const busy = this.#pending.size > 0 || [...this.#live].some((sub) => sub._waitedOn());
      if (busy === this.#held) return;
      this.#held = busy;
      for (const h of this.#handles) busy ? h.ref() : h.unref();
      if (this.#reconnectTimer) busy ? this.#reconnectTimer.ref?.() : this.#reconnectTimer.unref?.();
    });
  }

  // Reads NDJSON lines from `readable`; `conn` writes to the same peer.
  #attach(readable, conn) {
    this.#conn = conn;
    this._hold();
    const lines = new LineSplitter();
    const onLine = (text) => {
      const line = text.trim();
      if (!line) return;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        this.emit('protocolError', new Error(`netmodel sent a line that is not JSON: ${line.slice(0, 200)}`));
        return;
      }
      for (const m of Array.isArray(msg) ? msg : [msg]) this.#dispatch(conn, m);
    };
    readable.on('data', (chunk) => lines.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk, onLine));
    readable.on('error', () => {}); // followed by 'close'
    readable.on('close', () => {
      if (!this.process) return this.#lost(conn, new Error('socket closed'));
      // Its exit code and last stderr lines say why; they come just after.
      waitExit(this.process, 2000).then(() => this.#lost(conn, this.#exitError()));
    });
  }

  // Why a spawned server's stdout ended: did it ever answer, its exit, its last words.
  #exitError() {
    const child = this.process;
    const status = child.exitCode !== null ? `exit code ${child.exitCode}` : child.signalCode ? `signal ${child.signalCode}` : 'still running';
    const tail = this.#stderrTail.trim();
    return new Error(`netmodel serve ${this.#answered ? 'exited' : 'never started'} (${status})${tail ? `: ${tail}` : ''}`);
  }

  #dispatch(conn, msg) {
    if (!msg || typeof msg !== 'object' || conn !== this.#conn) return;
    this.#answered = true;
    if (typeof msg.method === 'string') {
      if ('id' in msg) {
        // The server sends no requests; answer as JSON-RPC asks rather than leave it waiting.
        this.#trySend({ jsonrpc: '2.0', id: msg.id, error: { code: ErrorCodes.MethodNotFound, message: 'method not found' } });
      } else if (msg.method === 'statsChanged') {
        // Written after the subscribe answer, never before: nothing to hold early.
        const { subscription, seq, stats } = msg.params ?? {};
        const sub = this.#subs.get(subscription);
        if (sub && stats && typeof stats === 'object' && sub._deliverStats(stats, seq)) this.emit('statsChanged', stats, sub, seq);
      } else if (msg.method === 'mutationOutcome') {
        // Like statsChanged: written after the subscribe answer, never before.
        const { subscription, seq, entry } = msg.params ?? {};
        const sub = this.#subs.get(subscription);
        if (sub && entry && typeof entry === 'object' && sub._deliverMutation(entry, seq)) this.emit('mutationOutcome', entry, sub, seq);
      } else if (msg.method === 'stateChanged') {
        const { subscription, seq, state, through } = msg.params ?? {};
        withHelpers(state);
        // Every change up to `through` of what this connection subscribed to is here.
        if (through !== undefined) for (const each of this.#subs.values()) each._sawVersion(through);
        const sub = this.#subs.get(subscription);
        if (sub) {
          if (sub._deliver(state, seq)) this.emit('stateChanged', state, sub, seq);
        } else if (typeof subscription === 'string' && stateKey(state) !== undefined && this.#subscribing(conn)) {
          // The server writes a turn's notifications before its replies: this may be
          // for the subscription whose answer comes next. The newest per key waits.
          if (!this.#early.has(subscription)) this.#early.set(subscription, new Map());
          this.#early.get(subscription).set(stateKey(state), [state, seq]);
        }
      } else {
        this.emit('notification', msg.method, msg.params);
      }
      return;
    }
    if (msg.id === null && msg.error) return this.#failUnmatched(conn, msg.error);
    const entry = this.#pending.get(msg.id);
    if (!entry) {
      // timed out or aborted meanwhile; a subscribe that went through is ended
      if (this.#abandoned.delete(msg.id) && typeof msg.result?.subscription === 'string') {
        this.#trySend({ jsonrpc: '2.0', id: ++this.#nextId, ...message('unsubscribe', { subscription: msg.result.subscription }) });
      }
      return;
    }
    this.#pending.delete(msg.id);
    entry.cleanup();
    withHelpers(msg.error?.data?.state);
    withHelpers(msg.result);
    if (Array.isArray(msg.result?.snapshot)) msg.result.snapshot.forEach(withHelpers);
    if (msg.error) entry.reject(RPCError.from(msg.error));
    else {
      try {
        entry.resolve(entry.onResult ? entry.onResult(msg.result) : msg.result);
      } catch (error) {
        entry.reject(error);
      }
    }
    if (this.#early.size && !this.#subscribing(conn)) this.#early.clear(); // no answer is left to claim them
  }

  #subscribing(conn) {
    for (const entry of this.#pending.values()) if (entry.method === 'subscribe' && entry.conn === conn) return true;
    return false;
  }

  // Notifications that came before the subscribe answer naming `sub`.
  #deliverEarly(sub) {
    const held = this.#early.get(sub.id);
    if (!held) return;
    this.#early.delete(sub.id);
    for (const [state, seq] of held.values()) if (sub._deliver(state, seq)) this.emit('stateChanged', state, sub, seq);
  }

  #sawInstance(result) {
    const instance = result && typeof result === 'object' ? result.instance : undefined;
    if (typeof instance !== 'string') return undefined;
    this.instance = instance;
    return instance;
  }

  // An error with `id: null` (a line the server could not read as a request) may be
  // any waiting request's: each fails with it rather than wait for good.
  #failUnmatched(conn, error) {
    this.emit('protocolError', new Error(`netmodel could not read a request: ${JSON.stringify(error).slice(0, 200)}`));
    for (const [id, entry] of this.#pending) {
      if (entry.conn !== conn) continue;
      this.#pending.delete(id);
      entry.cleanup();
      entry.reject(RPCError.from(error));
    }
  }

  // The connection `conn` ended (error null: because of close()).
  #lost(conn, error) {
    if (conn !== this.#conn || this.#state === 'closed') return;
    this.#conn = null;
    this.#abandoned.clear(); // the server ended their subscriptions with the connection
    this.#early.clear();
    const closing = this.#state === 'closing';
    // Requests in flight are failed, never re-sent: a mutation the server read is in
    // its outbox and reaches the backend anyway, and sending it again later could
    // overwrite an intent made meanwhile with a stale one (reads are cheap to ask again).
    for (const [id, entry] of this.#pending) {
      if (entry.conn !== conn) continue;
      this.#pending.delete(id);
      entry.cleanup();
      entry.reject(
        closing
          ? new ConnectionLostError(`netmodel client closed before the reply to ${entry.method}`, 'NETMODEL_CLOSED')
          : new ConnectionLostError(
              `netmodel connection lost before the reply to ${entry.method} (id ${id}): ${error?.message}; it may or may not have ` +
                'taken effect — an accepted mutation stays in the server\'s outbox; read the state again',
              'NETMODEL_CONNECTION_LOST',
              { cause: error },
            ),
      );
    }
    this.#subs.clear();
    if (closing) return this.#finish(null);
    if (this.#state !== 'open') return; // a reconnect attempt failed: its loop goes on
    this.#state = this.#reconnect ? 'reconnecting' : 'closed';
    this.emit('disconnect', error);
    if (!this.#reconnect) return this.#finish(error);
    this.#reconnectLoop(error);
  }

  // For good: subscriptions end (with an error unless close() was called), 'close'.
  #finish(error) {
    this.#state = 'closed';
    const end = error && new ConnectionLostError(`netmodel connection lost: ${error.message}`, undefined, { cause: error });
    for (const sub of this.#live) sub._close(end);
    this.#live.clear();
    this.emit('close');
  }

  async #reconnectLoop(lastError) {
    const { initialDelayMs, maxDelayMs, maxAttempts } = this.#reconnect;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      // Exponential backoff with jitter, so many clients of one restarted server spread out.
      const delay = Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      await new Promise((resolve) => {
        this.#reconnectTimer = setTimeout(resolve, delay);
        if (!this.#held) this.#reconnectTimer.unref(); // nothing waits: no reason to stay
      });
      if (this.#state !== 'reconnecting') return;
      let socket;
      try {
        socket = await openSocket(this.socketPath);
      } catch (error) {
        lastError = error; // not up (ENOENT, ECONNREFUSED) or not ours (UntrustedSocketError): try again
        continue;
      }
      if (this.#state !== 'reconnecting') return socket.destroy();
      this.#attachSocket(socket);
      try {
        await this.#restore();
      } catch (error) {
        lastError = error; // dropped again, or too slow, while restoring
        this.#conn?.destroy();
        continue;
      }
      this.#state = 'open';
      this.emit('reconnect', { attempt });
      return;
    }
    this.#finish(lastError); // gave up
  }

  // On a fresh connection: the configuration, then every live subscription again.
  async #restore() {
    if (this.#configured) {
      await this.#request('configure', this.#configured).catch((error) => {
        if (!(error instanceof RPCError)) throw error;
        this.emit('protocolError', error); // e.g. an environment the new server lacks
      });
    }
    for (const sub of [...this.#live]) {
      try {
        const since = sub._since(); // only what changed while away, if the server still knows
        await this.#request('subscribe', since ? { topics: sub.topics, since } : { topics: sub.topics }, {
          onResult: (result) => {
            this.#subs.set(result.subscription, sub);
            const instance = this.#sawInstance(result);
            for (const s of sub._resubscribed(result.subscription, result.snapshot ?? [], instance, result.version)) {
              this.emit('stateChanged', s, sub, 0);
            }
            this.#deliverEarly(sub);
          },
        });
      } catch (error) {
        if (!(error instanceof RPCError)) throw error; // lost or timed out: try again
        this.#live.delete(sub); // the new server refuses the topics: that subscription ends
        sub._close(error);
      }
    }
  }
}

// One NDJSON line. What the server could not parse is refused here, since its error
// would carry `id: null` and match no request: strings with a lone surrogate (which
// JSON.stringify escapes as \udXXX, an escape the server rejects).
function encode(msg) {
  return (
    JSON.stringify(msg, function (key, value) {
      if (!wellFormed(key) || (typeof value === 'string' && !wellFormed(value))) {
        const what = wellFormed(key) ? `the string ${JSON.stringify(value)}` : `the key ${JSON.stringify(key)}`;
        throw new TypeError(`netmodel ${msg.method}: ${what} has a lone surrogate, which the server cannot read`);
      }
      return value;
    }) + '\n'
  );
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = String.prototype.isWellFormed
  ? (s) => s.isWellFormed()
  : (s) => !loneSurrogate.test(s); // Node < 20

function message(method, params) {
  return params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
}

function openSocket(path) {
  return new Promise((resolve, reject) => {
    checkSocketFolder(path); // an UntrustedSocketError rejects: nothing is sent
    const socket = net.createConnection(path);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

// connect() met no server: no socket file, or one nobody listens on any more.
function nobodyListens(error) {
  return error?.code === 'ENOENT' || error?.code === 'ECONNREFUSED';
}

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

async function reap(child, timeout) {
  if (await waitExit(child, timeout)) return;
  child.kill('SIGTERM');
  if (await waitExit(child, 2000)) return;
  child.kill('SIGKILL');
  await waitExit(child, 5000);
}
