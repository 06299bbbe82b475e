// The stats topic through the Node client, against the real server: 'stats' events on
// the subscription and 'statsChanged' on the client, first right after subscribing,
// then when the figures change.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import test from 'node:test';
import { topic } from '../index.js';
import { needsBinary, sandbox, T } from './helpers.mjs';

const opts = { skip: needsBinary, timeout: 60_000 };

test('topic("stats") is the stats topic', () => {
  assert.deepEqual(topic('stats'), { type: 'stats' });
});

test('stats: pushed after subscribing, then when the figures change', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  const onClient = [];
  c.on('statsChanged', (stats, sub, seq) => onClient.push({ stats, sub, seq }));
  const sub = await c.subscribe('stats');
  const [first] = await once(sub, 'stats', { signal: AbortSignal.timeout(T) });
  assert.equal(first.subscriptions, 1);
  assert.equal(sub.stats, first);
  await c.follow('artist', 'banksy', { await: true });
  const [later] = await once(sub, 'stats', { signal: AbortSignal.timeout(T) });
  assert.equal(later.backend.mutations, 1);
  assert.ok(later.uptimeMs >= first.uptimeMs + 900, `${first.uptimeMs} then ${later.uptimeMs}`);
  assert.deepEqual(
    onClient.map((e) => [e.stats, e.sub]),
    [
      [first, sub],
      [later, sub],
    ],
  );
});
