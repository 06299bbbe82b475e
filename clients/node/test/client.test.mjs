// Against the real server: $NETMODEL_BIN, else .build/debug/netmodel (see helpers.mjs).

import assert from 'node:assert/strict';
import test from 'node:test';
import { BackendRejected, ConnectionLostError, InvalidParams, MethodNotFound, RPCError } from '../index.js';
import { connectWhenReady, needsBinary, nextMatching, pidAlive, sandbox, T, waitFor } from './helpers.mjs';

const opts = { skip: needsBinary, timeout: 60_000 };

test('spawn: follow, read, unfollow, stats, configure, call', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  const info = await c.initialize();
  assert.equal(info.serverInfo.name, 'netmodel');
  assert.ok(info.capabilities.methods.includes('follow'));

  const s = await c.follow('artist', 'banksy', { await: true });
  assert.deepEqual(
    [s.kind, s.id, s.following, s.confirmed, s.pending, s.error],
    ['artist', 'banksy', true, true, false, null],
  );
  const g = await c.getFollowState('artist', 'banksy');
  assert.equal(g.following, true);
  assert.ok(g.version >= s.version);
  const u = await c.unfollow('artist', 'banksy', { await: true });
  assert.equal(u.following, false);
  assert.equal(u.confirmed, false);
  assert.ok(u.version > s.version);
  const o = await c.setFollowState('artist', 'banksy', true); // optimistic reply
  assert.equal(o.following, true);
  const r = await c.getFollowState('artist', 'banksy', { refresh: true, maxAgeMs: 0 });
  assert.equal(r.following, true);

  const stats = await c.stats();
  assert.equal(stats.requests.byMethod.follow, 1);
  assert.equal(stats.requests.byMethod.setFollowState, 1);
  assert.equal(typeof (await c.configure({ authToken: null })).environment, 'string');
  assert.equal((await c.call('stats', {})).requests.byMethod.stats, 2);
  const seen = await c.inspect({ sections: ['entities', 'connections'], limit: 1 });
  assert.deepEqual(Object.keys(seen).sort(), ['connections', 'entities', 'instance', 'limit', 'now', 'uptimeMs']);
  assert.equal(seen.limit, 1);
  assert.equal(seen.connections.total, 1);
});

test('socket: connect, follow from one client, stateChanged on another', opts, async (t) => {
  const box = sandbox(t);
  box.startServer();
  const a = await connectWhenReady({ path: box.socket });
  const b = await connectWhenReady({ path: box.socket });
  t.after(() => Promise.all([a.close(), b.close()]));
  assert.equal(a.socketPath, box.socket);

  const events = [];
  b.on('stateChanged', (state, s, seq) => events.push({ state, sub: s, seq }));
  const sub = await b.subscribe({ type: 'entity', kind: 'artist', id: 'banksy' });
  assert.ok(sub.id);
  assert.deepEqual(sub.snapshot.map((s) => [s.kind, s.id, s.following]), [['artist', 'banksy', null]]);
  const changes = [];
  sub.on('change', (state) => changes.push(state));

  // The subscription's own fetch first, so that the follow is a change.
  await nextMatching(sub, (s) => s.confirmed === false);
  const optimistic = await a.follow('artist', 'banksy');
  assert.equal(optimistic.following, true);
  const settled = await nextMatching(sub, (s) => s.following === true && s.confirmed === true);
  assert.equal(settled.pending, false);
  assert.ok(settled.version > optimistic.version);

  // The same states reached the client's and the subscription's events (the latter
  // listened from a little later, and got the snapshot first), in order, once each.
  assert.deepEqual(changes[0], sub.snapshot[0]);
  assert.ok(events.every((e) => e.sub === sub && e.state.id === 'banksy'));
  assert.deepEqual(events.at(-1).state, settled);
  assert.deepEqual(events.slice(-(changes.length - 1)).map((e) => e.state), changes.slice(1));
  const seqs = events.map((e) => e.seq);
  assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
  const versions = events.map((e) => e.state.version);
  assert.equal(new Set(versions).size, versions.length);
  assert.deepEqual(versions, [...versions].sort((x, y) => x - y));
  assert.equal(sub.state('artist', 'banksy').version, settled.version);

  await sub.unsubscribe();
  assert.equal(sub.closed, true);
  for await (const _ of sub) assert.fail('iteration ends after unsubscribe');
  await assert.rejects(b.unsubscribe(sub.id), InvalidParams); // no longer a subscription
});

test('errors: invalid params with data.path, method not found', opts, async (t) => {
  const c = await sandbox(t).spawnClient();
  t.after(() => c.close());
  await assert.rejects(c.follow('Artist', 'x'), (e) => {
    assert.ok(e instanceof InvalidParams && e instanceof RPCError);
    assert.equal(e.code, -32602);
    assert.equal(e.data.path, '/kind');
    assert.ok(e.message.length > 0);
    return true;
  });
  await assert.rejects(c.subscribe([]), (e) => e.code === -32602 && e.data.path === '/topics');
  await assert.rejects(c.call('noSuchMethod', { kind: 'artist', id: 'x' }), MethodNotFound);
});

test('errors: an awaited follow the backend refuses rejects with the rolled-back state', opts, async (t) => {
  const c = await sandbox(t).spawnClient(['--simulate', 'failure=1,status=422', '--seed', '1']);
  t.after(() => c.close());
  const sub = await c.subscribe('entity:artist/banksy');
  await assert.rejects(c.follow('artist', 'banksy', { await: true }), (e) => {
    assert.ok(e instanceof BackendRejected);
    assert.equal(e.code, -32002);
    assert.equal(e.data.status, 422);
    assert.equal(e.retryable, false);
    assert.notEqual(e.state.following, true); // rolled back
    assert.equal(e.state.pending, false);
    assert.equal(e.state.error.code, -32002);
    return true;
  });
  // Subscribers see the rollback too.
  const s = await nextMatching(sub, (s) => s.error !== null && !s.pending);
  assert.notEqual(s.following, true);
});

test('timeout and abort cancel the request on the server', opts, async (t) => {
  const c = await sandbox(t).spawnClient(['--simulate', 'latency=2000']);
  t.after(() => c.close());
  await assert.rejects(c.follow('artist', 'a', { await: true, timeout: 100 }), { name: 'TimeoutError' });
  await assert.rejects(c.follow('artist', 'b', { await: true, signal: AbortSignal.timeout(100) }), { name: 'TimeoutError' });
  // The server answered both waits with -32800 (which the client, having given up, ignores).
  await waitFor(async () => (await c.stats()).errors.byCode['-32800'] === 2, 'two cancelled requests');
});

test('close: shutdown and exit, then nothing runs; idempotent', opts, async (t) => {
  const c = await sandbox(t).spawnClient();
  await c.follow('artist', 'a');
  const pid = c.pid;
  assert.ok(pidAlive(pid));
  const closed = new Promise((resolve) => c.once('close', resolve));
  await c.close();
  await closed;
  assert.equal(c.process.exitCode, 0); // `exit` after `shutdown`
  assert.equal(pidAlive(pid), false);
  await assert.rejects(c.stats(), (e) => e instanceof ConnectionLostError && e.code === 'NETMODEL_CLOSED');
  await c.close();
});

test('close kills a server that does not answer', opts, async (t) => {
  const c = await sandbox(t).spawnClient();
  await c.stats();
  const pid = c.pid;
  process.kill(pid, 'SIGSTOP'); // hung: answers nothing, and SIGTERM waits until SIGCONT
  const started = Date.now();
  await c.close({ timeout: 300 });
  assert.equal(c.process.signalCode, 'SIGKILL');
  assert.equal(pidAlive(pid), false);
  assert.ok(Date.now() - started < T);
});

test('a spawned server that dies fails pending calls and ends subscriptions with an error', opts, async (t) => {
  const c = await sandbox(t).spawnClient(['--simulate', 'latency=5000']);
  t.after(() => c.close());
  const sub = await c.subscribe('entity:artist/x');
  const pending = c.follow('artist', 'x', { await: true });
  const iterating = nextMatching(sub, () => false);
  const disconnected = new Promise((resolve) => c.once('disconnect', resolve));
  await c.stats(); // the follow was read
  c.process.kill('SIGKILL');
  await assert.rejects(pending, (e) => e instanceof ConnectionLostError && e.code === 'NETMODEL_CONNECTION_LOST');
  await assert.rejects(iterating, ConnectionLostError);
  assert.ok((await disconnected) instanceof Error);
  await assert.rejects(c.stats(), ConnectionLostError);
});
