// A socket client outlives its server: reconnect, re-subscribe, go on delivering.

import assert from 'node:assert/strict';
import test from 'node:test';
import { ConnectionLostError, topic } from '../index.js';
import { connectWhenReady, needsBinary, nextMatching, sandbox, waitFor } from './helpers.mjs';

test('after the server restarts on the same socket, subscriptions keep delivering', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const box = sandbox(t);
  const first = box.startServer(['--simulate', 'latency=300']);
  const c = await connectWhenReady({ path: box.socket, reconnect: { initialDelayMs: 20, maxDelayMs: 200 } });
  t.after(() => c.close());

  // Two subscriptions, the first one ended: on the new server the live one gets
  // another name than it had, so the client has to map the names.
  await c.configure({ environment: 'staging' }); // to be replayed on the new server
  const gone = await c.subscribe('entity:gene/g1');
  const sub = await c.subscribe('entity:artist/banksy');
  await gone.unsubscribe();
  const oldName = sub.id;
  await nextMatching(sub, (s) => s.confirmed === false); // fetched

  // Quick toggles raise the version (each one changes the shown state) while the
  // backend call is slow; the last one is a follow still pending at the kill.
  for (let i = 0; i < 5; i++) {
    await c.follow('artist', 'banksy');
    await c.unfollow('artist', 'banksy');
  }
  const pending = c.follow('artist', 'banksy', { await: true });
  const last = await nextMatching(sub, (s) => s.following === true && s.pending);
  assert.ok(last.version >= 10);

  const disconnected = new Promise((resolve) => c.once('disconnect', resolve));
  const reconnected = new Promise((resolve) => c.once('reconnect', resolve));
  first.kill('SIGKILL');

  await disconnected;
  await assert.rejects(pending, (e) => e instanceof ConnectionLostError && e.code === 'NETMODEL_CONNECTION_LOST');
  assert.equal(c.connected, false);
  await assert.rejects(c.stats(), (e) => e instanceof ConnectionLostError && e.code === 'NETMODEL_NOT_CONNECTED');

  await waitFor(() => first.exitCode !== null || first.signalCode !== null, 'the first server to die');
  const second = box.startServer(); // same socket and state folder, no latency
  const { attempt } = await reconnected;
  assert.ok(attempt >= 1);
  assert.equal(c.connected, true);
  assert.notEqual(sub.id, oldName, 'the new server named the subscription anew');
  assert.equal(gone.closed, true);
  assert.equal((await c.configure()).environment, 'staging');

  // The new server replays the outbox: the follow the old one accepted gets confirmed.
  // Its versions continue above what the client held (never backwards on one state folder).
  const replayed = await nextMatching(sub, (s) => s.following === true && s.confirmed === true && !s.pending);
  assert.ok(replayed.version > last.version);

  // And the subscription goes on: a change made by another client reaches it.
  const other = await connectWhenReady({ path: box.socket, reconnect: false });
  t.after(() => other.close());
  await other.unfollow('artist', 'banksy');
  const s = await nextMatching(sub, (s) => s.following === false && s.confirmed === false);
  assert.equal(s.id, 'banksy');
  assert.equal((await c.stats()).subscriptions, 1); // the re-subscription, not one per topic ever seen
  await c.close();
  assert.equal(sub.closed, true);
  second.kill('SIGTERM');
});

test('list subscriptions are restored after a restart and go on delivering ListStates', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const box = sandbox(t);
  const first = box.startServer();
  const c = await connectWhenReady({ path: box.socket, reconnect: { initialDelayMs: 20, maxDelayMs: 200 } });
  t.after(() => c.close());
  for (const id of ['banksy', 'kaws', 'hirst']) await c.follow('artist', id, { await: true });

  const sub = await c.subscribe(topic.list('following/artist'));
  const loaded = (n) => (s) => s.list === 'following/artist' && s.state === 'loaded' && s.items.length === n;
  const before = loaded(3)(sub.snapshot[0]) ? sub.snapshot[0] : await nextMatching(sub, loaded(3));

  const reconnected = new Promise((resolve) => c.once('reconnect', resolve));
  first.kill('SIGKILL');
  await waitFor(() => first.exitCode !== null || first.signalCode !== null, 'the first server to die');
  // While the client is away, another host unfollows kaws on the new server.
  const second = box.startServer();
  const other = await connectWhenReady({ path: box.socket, reconnect: false });
  t.after(() => other.close());
  await other.unfollow('artist', 'kaws', { await: true });
  await reconnected;
  assert.equal(sub.closed, false);
  assert.deepEqual(sub.topics, [{ type: 'list', list: 'following/artist', params: {} }]);

  // The new server's list reaches the same Subscription.
  const restored = await nextMatching(sub, loaded(2));
  assert.deepEqual(restored.items.map((i) => i.id).sort(), ['banksy', 'hirst']);
  assert.ok(sub.snapshot.every((s) => s.list === 'following/artist'), 'the new snapshot is the list');
  assert.ok(before.items.some((i) => i.id === 'kaws'));

  // And later changes of the list go on arriving.
  await other.unfollow('artist', 'hirst');
  const after = await nextMatching(
    sub,
    (s) => s.list === 'following/artist' && s.items.length > 0 && s.items.find((i) => i.id === 'hirst')?.following !== true,
  );
  assert.equal(after.items.find((i) => i.id === 'banksy').following, true);
  assert.equal((await c.stats()).subscriptions, 1);
  await c.close();
  second.kill('SIGTERM');
});
