// A socket client outlives its server: reconnect, re-subscribe, go on delivering.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import test from 'node:test';
import { ConnectionLostError, topic } from '../index.js';
import { BIN, connectWhenReady, needsBinary, nextMatching, REPO, sandbox, waitFor } from './helpers.mjs';

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
  const instanceBefore = sub.instance;
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
  // Its versions go on above the old ones (same state folder); it is another instance.
  const replayed = await nextMatching(sub, (s) => s.following === true && s.confirmed === true && !s.pending);
  assert.ok(replayed.version > last.version);
  assert.ok(sub.instance && sub.instance !== instanceBefore && c.instance === sub.instance);

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

  // The new server's list (its versions start again) reaches the same Subscription.
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

// A proxy in front of the real server: dropping its connections drops the client's
// while the server (and its instance) lives on.
async function proxy(t, target, at) {
  const pairs = new Set();
  const server = net.createServer((down) => {
    const up = net.createConnection(target);
    pairs.add([down, up]);
    down.pipe(up).on('error', () => {});
    up.pipe(down).on('error', () => {});
    down.on('error', () => up.destroy()).on('close', () => up.destroy());
    up.on('error', () => down.destroy()).on('close', () => down.destroy());
  });
  await new Promise((resolve) => server.listen(at, resolve));
  t.after(() => server.close());
  return { drop: () => pairs.forEach(([d, u]) => (d.destroy(), u.destroy())) };
}

test('a reconnect to the same server process keeps the versions held (no state twice)', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const box = sandbox(t);
  box.startServer();
  await connectWhenReady({ path: box.socket, reconnect: false }).then((c) => c.close());
  const p = await proxy(t, box.socket, `${box.socket}.proxy`);
  const c = await connectWhenReady({ path: `${box.socket}.proxy`, reconnect: { initialDelayMs: 20, maxDelayMs: 100 } });
  t.after(() => c.close());
  const sub = await c.subscribe('entity:artist/same');
  const instance = sub.instance;
  assert.ok(instance && c.instance === instance);
  const seen = [];
  sub.on('change', (s) => seen.push(s.version));
  await c.follow('artist', 'same', { await: true });
  await waitFor(() => sub.state('artist', 'same')?.confirmed === true, 'the follow');
  const reconnected = new Promise((resolve) => c.once('reconnect', resolve));
  p.drop();
  await reconnected;
  assert.equal(sub.instance, instance);
  await c.unfollow('artist', 'same', { await: true });
  await waitFor(() => sub.state('artist', 'same')?.confirmed === false, 'the unfollow');
  assert.deepEqual(seen, [...new Set(seen)].sort((a, b) => a - b), `a state delivered twice: ${seen}`);
});

// docs/clients.md, "connection notices": Node emits 'disconnect'/'reconnect' and prints
// nothing — a host's own output stays its own.
test('a drop and a reconnect print nothing', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const s = sandbox(t);
  const done = path.join(s.dir, 'done');
  const script = `
    import { spawn } from 'node:child_process';
    import fs from 'node:fs';
    import { NetmodelClient } from ${JSON.stringify(path.join(REPO, 'clients', 'node', 'index.js'))};
    const args = ['serve', '--socket=${s.socket}', '--no-stdio', '--state-dir', ${JSON.stringify(s.stateDir)}];
    const start = () => spawn(${JSON.stringify(BIN)}, args, { stdio: 'ignore' });
    const until = async (f) => { for (;;) { try { return await f(); } catch { await new Promise((r) => setTimeout(r, 20)); } } };
    let server = start();
    const c = await until(() => NetmodelClient.connect({ path: ${JSON.stringify(s.socket)}, reconnect: { initialDelayMs: 20, maxDelayMs: 100 } }));
    await c.subscribe('entity:artist/banksy');
    const lost = new Promise((r) => c.once('disconnect', r));
    const back = new Promise((r) => c.once('reconnect', r));
    server.kill('SIGKILL');
    await lost;
    server = start();
    await back;
    await c.follow('artist', 'banksy', { await: true });
    await c.close();
    server.kill('SIGKILL');
    fs.writeFileSync(${JSON.stringify(done)}, 'ok');
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: s.env, encoding: 'utf8', timeout: 45_000 });
  assert.equal(fs.readFileSync(done, 'utf8'), 'ok', `${r.stdout}${r.stderr}`);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, '');
});

// A relay in front of the server's socket: cut, it drops every connection and stops
// listening; the server process (its instance) stays. Counts what the server sends.
function relay(target, at) {
  const sockets = new Set();
  const r = { fromServer: 0, server: null };
  r.start = () =>
    new Promise((resolve) => {
      r.server = net.createServer((client) => {
        const upstream = net.connect(target);
        sockets.add(client).add(upstream);
        upstream.on('data', (data) => {
          r.fromServer += data.length;
          client.write(data);
        });
        client.on('data', (data) => upstream.write(data));
        for (const [a, b] of [[client, upstream], [upstream, client]]) {
          a.on('close', () => b.destroy());
          a.on('error', () => b.destroy());
        }
      });
      r.server.listen(at, resolve);
    });
  r.cut = () =>
    new Promise((resolve) => {
      r.server.close(resolve);
      for (const s of sockets) s.destroy();
      sockets.clear();
    });
  return r;
}

test('a reconnect to the same server resumes with only what changed while away', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const box = sandbox(t);
  const server = box.startServer();
  t.after(() => server.kill('SIGTERM'));
  const other = await connectWhenReady({ path: box.socket, reconnect: false });
  t.after(() => other.close());
  const front = relay(box.socket, `${box.socket}.relay`);
  await front.start();
  t.after(() => front.cut());
  const c = await connectWhenReady({ path: `${box.socket}.relay`, reconnect: { initialDelayMs: 20, maxDelayMs: 200 } });
  t.after(() => c.close());
  const names = Array.from({ length: 200 }, (_, n) => `resume-${n}`);
  const sub = await c.subscribe(names.map((n) => `entity:artist/${n}`));
  await waitFor(() => sub.states.filter((s) => s.confirmed === false).length === names.length, 'every state fetched');
  const full = front.fromServer;
  const disconnected = new Promise((resolve) => c.once('disconnect', resolve));
  const reconnected = new Promise((resolve) => c.once('reconnect', resolve));
  await front.cut();
  await disconnected;
  const changed = [];
  for (const n of names.slice(0, 3)) changed.push(await other.follow('artist', n, { await: true }));
  front.fromServer = 0;
  await front.start();
  await reconnected;
  assert.deepEqual(sub.snapshot.map((s) => s.id).sort(), names.slice(0, 3), 'only what changed while away');
  for (const want of changed) assert.equal(sub.state('artist', want.id).version, want.version);
  assert.equal(sub.states.length, names.length);
  assert.ok(front.fromServer < full / 10, `${front.fromServer} bytes to resume against ${full} for the whole`);
});
