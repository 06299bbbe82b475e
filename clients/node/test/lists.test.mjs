// Lists and preload against the real server (local backend: lists `following/<kind>`,
// pages of 50).

import assert from 'node:assert/strict';
import test from 'node:test';
import { InvalidParams, UnknownKindOrList, topic } from '../index.js';
import { connectWhenReady, needsBinary, nextMatching, sandbox, waitFor } from './helpers.mjs';

const opts = { skip: needsBinary, timeout: 60_000 };
const LIST = 'following/artist';
const PAGE = 50;
const ids = (n) => Array.from({ length: n }, (_, i) => `artist-${String(i).padStart(2, '0')}`);
const isList = (s) => typeof s.list === 'string';
const item = (state, id) => state.items.find((i) => i.kind === 'artist' && i.id === id);

async function followAll(client, list) {
  await Promise.all(list.map((id) => client.follow('artist', id, { await: true })));
}

test('fetchList pages through following/artist', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  const followed = ids(60);
  await followAll(c, followed);

  const first = await c.fetchList(LIST);
  assert.equal(first.list, LIST);
  assert.deepEqual(first.params, {});
  assert.equal(first.state, 'loaded');
  assert.equal(first.error, null);
  assert.equal(first.items.length, PAGE);
  assert.equal(first.hasMore, true);
  assert.ok(Array.isArray(first.sections));
  for (const i of first.items) {
    assert.equal(i.kind, 'artist');
    assert.equal(i.following, true, `${i.id} is followed`);
    assert.ok('attributes' in i);
  }

  const next = await c.fetchList(LIST, { page: 'next' });
  assert.equal(next.state, 'loaded');
  assert.equal(next.items.length, 60);
  assert.equal(next.hasMore, false);
  assert.ok(next.version > first.version);
  assert.deepEqual(next.items.slice(0, PAGE), first.items, 'the next page appends to the first');
  assert.deepEqual(next.items.map((i) => i.id).sort(), followed);

  // A complete list answers `next` at once with what it holds; another kind is another list.
  const again = await c.fetchList(LIST, { page: 'next' });
  assert.equal(again.items.length, 60);
  assert.equal(again.hasMore, false);
  const genes = await c.fetchList('following/gene', { page: 'first' });
  assert.equal(genes.list, 'following/gene');
  assert.deepEqual([genes.state, genes.items, genes.hasMore], ['loaded', [], false]);

  const stats = await c.stats();
  assert.equal(stats.requests.byMethod.fetchList, 4);
  assert.ok(stats.lists.held >= 2);
  assert.ok(stats.lists.pageCalls >= 3);
});

test('a list subscription gets a ListState when an item is unfollowed', opts, async (t) => {
  const box = sandbox(t);
  box.startServer();
  const a = await connectWhenReady({ path: box.socket });
  const b = await connectWhenReady({ path: box.socket });
  t.after(() => Promise.all([a.close(), b.close()]));
  await followAll(a, ['banksy', 'kaws', 'hirst']);

  const events = [];
  b.on('stateChanged', (state) => events.push(state));
  const changes = [];
  // An entity topic and a list topic: the snapshot holds the EntityState, then the ListState.
  const sub = await b.subscribe([topic.entity('artist', 'kaws'), topic.list(LIST)]);
  sub.on('change', (state) => changes.push(state));
  assert.deepEqual(sub.topics, [{ type: 'entity', kind: 'artist', id: 'kaws' }, { type: 'list', list: LIST, params: {} }]);
  assert.equal(sub.snapshot.length, 2);
  assert.equal(sub.snapshot[0].id, 'kaws');
  assert.equal(sub.snapshot[1].list, LIST);

  // Loaded with kaws followed (from the snapshot, or once the list has loaded).
  const loaded = (s) => isList(s) && s.state === 'loaded' && item(s, 'kaws')?.following === true;
  const before = loaded(sub.snapshot[1]) ? sub.snapshot[1] : await nextMatching(sub, loaded);
  assert.equal(before.items.length, 3);

  await a.unfollow('artist', 'kaws');
  // The join: kaws shows unfollowed in the list, or the refetched list lacks it.
  const after = await nextMatching(
    sub,
    (s) => isList(s) && s.version > before.version && s.items.length > 0 && item(s, 'kaws')?.following !== true,
  );
  assert.equal(after.list, LIST);
  assert.deepEqual(after.params, {});
  assert.equal(item(after, 'banksy').following, true);
  assert.equal(item(after, 'hirst').following, true);
  // Kept per list+params in the subscription, delivered to both kinds of listeners.
  assert.ok(sub.list(LIST).version >= after.version);
  assert.equal(sub.list(LIST, { other: 1 }), undefined);
  assert.ok(changes.some((s) => s === after));
  assert.ok(events.some((s) => s === after));
  assert.equal(sub.state('artist', 'kaws').following, false);

  // Eventually the list is loaded again and reflects the truth.
  await waitFor(() => {
    const s = sub.list(LIST);
    return s.state === 'loaded' && item(s, 'kaws')?.following !== true && s.items.length >= 2;
  }, 'the list to settle');
});

test('list params with null members name the list the server names', opts, async (t) => {
  // The server drops list params whose value is null; the client's key drops them too.
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  await followAll(c, ['a1']);
  const given = { tag: null };
  const got = await c.fetchList(LIST, { params: given });
  assert.deepEqual(got.params, {});
  const sub = await c.subscribe(topic.list(LIST, given));
  t.after(() => sub.unsubscribe().catch(() => {}));
  assert.ok(sub.list(LIST, given) !== undefined, 'found by the params given');
  assert.equal(sub.list(LIST, given), sub.list(LIST));
});

test('getEntity returns an EntityState', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  await c.follow('artist', 'banksy', { await: true });

  const e = await c.getEntity('artist', 'banksy');
  assert.deepEqual(
    [e.kind, e.id, e.following, e.confirmed, e.pending, e.error],
    ['artist', 'banksy', true, true, false, null],
  );
  assert.ok('attributes' in e, 'EntityState carries attributes');
  assert.ok(e.attributes === null || typeof e.attributes === 'object');
  assert.equal(typeof e.version, 'number');

  const never = await c.getEntity('artist', 'nobody', { refresh: true });
  assert.deepEqual([never.kind, never.id, never.following, never.confirmed], ['artist', 'nobody', false, false]);
  await assert.rejects(c.getEntity('Not A Kind', 'x'), (err) => err instanceof InvalidParams && err.data.path === '/kind');
  assert.equal((await c.stats()).requests.byMethod.getEntity, 3);
});

test('setInterfaceState returns the count and starts preloads', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  const sub = await c.subscribe('entity:artist');
  const before = (await c.stats()).preload;
  assert.equal(typeof before.started, 'number');

  // ListItems and EntityStates are taken as they are: only kind and id are sent.
  const items = [
    { kind: 'artist', id: 'p1' },
    { kind: 'artist', id: 'p2', following: null, attributes: null },
    { kind: 'artist', id: 'p3', following: null, confirmed: null, pending: false, error: null, attributes: null, version: 0 },
  ];
  assert.equal(await c.setInterfaceState(items, 'visible'), 3);
  const started = await waitFor(async () => {
    const p = (await c.stats()).preload;
    return p.started >= before.started + 3 && p;
  }, 'three preloads to start');
  assert.ok(started.started >= 3);
  // Preloaded states reach subscribers.
  const p1 = await nextMatching(sub, (s) => s.id === 'p1' && s.confirmed === false);
  assert.equal(p1.following, false);

  assert.equal(await c.setInterfaceState([items[0]], 'none'), 1);
  assert.equal(await c.setInterfaceState([], 'preload'), 0);
  await assert.rejects(c.setInterfaceState(items, 'hidden'), InvalidParams);
});

test('an unknown list rejects with UnknownKindOrList (-32004)', opts, async (t) => {
  const box = sandbox(t);
  const c = await box.spawnClient();
  t.after(() => c.close());
  const isUnknown = (e) => e instanceof UnknownKindOrList && e.code === -32004 && e.data?.list === 'no-such-list';
  await assert.rejects(c.fetchList('no-such-list'), isUnknown);
  await assert.rejects(c.fetchList('no-such-list', { page: 'next' }), isUnknown);
  await assert.rejects(c.subscribe(topic.list('no-such-list')), isUnknown);
  await assert.rejects(c.subscribe('list:no-such-list'), isUnknown);
  assert.equal((await c.stats()).subscriptions, 0, 'no subscription is made');
  await assert.rejects(c.fetchList(LIST, { page: 'last' }), InvalidParams);
});
