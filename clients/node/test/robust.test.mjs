// Nothing hangs, leaks or crashes (issue 18): unreadable params, id-less errors,
// abandoned subscribes, throwing listeners. Against the real server.

import assert from 'node:assert/strict';
import test from 'node:test';
import { ParseError } from '../index.js';
import { needsBinary, sandbox, T, waitFor } from './helpers.mjs';

const opts = { skip: needsBinary, timeout: 60_000 };

test('params the server cannot read reject at once; an id-less error fails the waiting calls', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient(['--simulate', 'latency=3000']);
  t.after(() => c.close());
  const started = Date.now();
  await assert.rejects(c.follow('artist', 'a\uDC80'), (e) => e instanceof TypeError && /lone surrogate/.test(e.message));
  await assert.rejects(c.call('stats', { ['k\uD800']: 1 }), TypeError);
  assert.ok(Date.now() - started < 1000);
  assert.ok((await c.stats()).requests.total >= 1); // still usable
  assert.ok(await c.getFollowState('artist', '\u{1F600}')); // a surrogate pair is fine

  const protocolErrors = [];
  c.on('protocolError', (e) => protocolErrors.push(e));
  const pending = c.follow('artist', 'b', { await: true, timeout: T });
  await new Promise((r) => setTimeout(r, 200));
  c.process.stdin.write('{"jsonrpc":"2.0","id":\n'); // a line the server cannot read
  const failedAt = Date.now();
  await assert.rejects(pending, ParseError);
  assert.ok(Date.now() - failedAt < 2000, 'failed at once, not by its timeout');
  assert.equal(protocolErrors.length, 1);
});

test('a subscribe that times out or is aborted is unsubscribed; close() and asyncDispose end one', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  await assert.rejects(c.subscribe('entity:artist/a', { timeout: 0 }), { name: 'TimeoutError' });
  const ac = new AbortController();
  const aborted = c.subscribe('entity:artist/b', { signal: ac.signal });
  ac.abort();
  await assert.rejects(aborted);
  await waitFor(async () => (await c.stats()).subscriptions === 0, 'the abandoned subscriptions to end');

  const one = await c.subscribe('entity:artist/c');
  const two = await c.subscribe('entity:artist/d');
  assert.equal((await c.stats()).subscriptions, 2);
  await one.close();
  await two[Symbol.asyncDispose]();
  assert.ok(one.closed && two.closed);
  assert.equal((await c.stats()).subscriptions, 0);
});

test('a listener that throws or rejects does not crash the process', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  const reported = [];
  c.on('listenerError', (error, event) => reported.push([event, error.message]));
  const sub = await c.subscribe('entity:artist/a');
  const seen = [];
  sub.on('change', () => {
    throw new Error('sync boom');
  });
  sub.on('change', async () => {
    throw new Error('async boom');
  });
  sub.on('change', (s) => seen.push(s));
  c.on('stateChanged', () => {
    throw new Error('client boom');
  });
  await c.follow('artist', 'a', { await: true });
  await waitFor(() => seen.some((s) => s.confirmed === true), 'the later listener to see the follow');
  await waitFor(() => reported.some(([, m]) => m === 'async boom'), 'the rejection reported');
  assert.ok(reported.some(([e, m]) => e === 'change' && m === 'sync boom'));
  assert.ok(reported.some(([e, m]) => e === 'stateChanged' && m === 'client boom'));
  assert.ok((await c.stats()).requests.total > 0); // the connection still works
});

test('needsCredentials: an intent the backend refused 401 waits for a token', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient(['--simulate', 'failure=1,status=401']);
  t.after(() => c.close());
  const sub = await c.subscribe('entity:artist/locked');
  const shown = await c.follow('artist', 'locked');
  assert.equal(typeof shown.needsCredentials, 'boolean'); // replies have it too
  await waitFor(() => sub.state('artist', 'locked')?.needsCredentials && (sub.state('artist', 'locked').following === true), 'the waiting state');
  const s = sub.state('artist', 'locked');
  assert.equal(s.error.code, -32003);
  assert.equal(JSON.stringify(s).includes('needsCredentials'), false); // the server's JSON as it was
  // The read the subscription made may be the 401 shown first; the intent's own 401
  // comes a turn later (its call waits for the intent's commit), then it is counted.
  let waiting = 0;
  await waitFor(async () => (waiting = (await c.stats()).waitingForCredentials) === 1, 'the intent counted as waiting');
  assert.equal(waiting, 1);
});

test('sync: resolves once the intents made before it settled, listing how each ended', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient(['--simulate', 'latency=200,failure=0']);
  t.after(() => c.close());
  await c.follow('artist', 'banksy');
  await c.unfollow('artist', 'kaws');
  const result = await c.sync({ timeoutMs: 5000 });
  assert.deepEqual(result.settled.map((s) => [s.id, s.outcome, s.state.confirmed]), [
    ['banksy', 'confirmed', true],
    ['kaws', 'confirmed', false],
  ]);
  assert.deepEqual(result.waiting, []);
  assert.deepEqual(await c.sync(), { settled: [], waiting: [] });
});
