// The ledger of outcomes through the Node client, against the real server:
// getMutations pages it, failedMutations is what a client that reconnects tells its
// user, and the mutations topic gives a 'mutation' event per outcome.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import test from 'node:test';
import { mutationFailed, mutationMessage, topic } from '../index.js';
import { needsBinary, sandbox, T } from './helpers.mjs';

const opts = { skip: needsBinary, timeout: 60_000 };
const refusing = ['--simulate', 'latency=20,failure=1,status=422'];

test('topic("mutations") is the mutations topic', () => {
  assert.deepEqual(topic('mutations'), { type: 'mutations' });
});

test('a refused follow is in the ledger, pushed, and told after a restart', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient(refusing);
  const onClient = [];
  c.on('mutationOutcome', (entry, sub) => onClient.push([entry, sub]));
  const sub = await c.subscribe('mutations');
  // Listened for first: the push comes ahead of the follow's answer.
  const outcome = once(sub, 'mutation', { signal: AbortSignal.timeout(T) });
  await assert.rejects(c.follow('artist', 'kaws', { await: true }), { code: -32002 });
  const [pushed] = await outcome;
  assert.equal(pushed.outcome, 'refused');
  assert.ok(mutationFailed(pushed));
  assert.match(mutationMessage(pushed), /^your follow of artist\/kaws failed: simulated HTTP 422/);
  assert.deepEqual(onClient, [[pushed, sub]]);
  const page = await c.getMutations({ since: 0 });
  assert.deepEqual(page, { entries: [pushed], next: 1, last: 1, more: false, truncated: false });
  await assert.rejects(c.getMutations({ limit: 0 }), { code: -32602 });
  await c.close();

  const again = await box.spawnClient();
  t.after(() => again.close());
  const { failed, next } = await again.failedMutations();
  assert.deepEqual(failed, [pushed]);
  assert.equal(next, 1);
  assert.deepEqual(await again.failedMutations(next), { failed: [], next: 1 });
});
