// Unit tests: no netmodel binary; a stand-in server where a connection is needed.

import assert from 'node:assert/strict';
import test from 'node:test';
import {
  BackendRejected,
  ClientErrorCodes,
  ConnectionLostError,
  ErrorCodes,
  InvalidParams,
  NetmodelClient,
  RPCError,
  StateStore,
  TimeoutError,
  defaultSocketPath,
  stateKey,
  topic,
} from '../index.js';
import { fakeServer, nextMatching, T, waitFor } from './helpers.mjs';

const entity = (id, version, extra = {}) => ({
  kind: 'artist', id, following: true, confirmed: true, pending: false, error: null, attributes: null, version, ...extra,
});

test('RPCError.from maps codes to subclasses with data and state', () => {
  const e = RPCError.from({ code: -32602, message: 'kind must match', data: { path: '/kind' } });
  assert.ok(e instanceof InvalidParams && e instanceof RPCError && e instanceof Error);
  assert.equal(e.code, ErrorCodes.InvalidParams);
  assert.equal(e.name, 'InvalidParams');
  assert.equal(e.message, 'kind must match');
  assert.deepEqual(e.data, { path: '/kind' });
  assert.equal(e.state, undefined);

  const rolledBack = entity('b', 2, { following: null, confirmed: null });
  const r = RPCError.from({ code: -32002, message: 'HTTP 422', data: { status: 422, retryable: false, state: rolledBack } });
  assert.ok(r instanceof BackendRejected);
  assert.deepEqual(r.state, rolledBack);
  assert.equal(r.retryable, false);

  const unknown = RPCError.from({ code: -1, message: 'odd' });
  assert.equal(unknown.constructor, RPCError);
  assert.equal(unknown.code, -1);
  assert.equal(RPCError.from('garbage').code, ErrorCodes.InternalError);
});

test('topic shorthands and the default socket path', () => {
  assert.deepEqual(topic('entity:artist/banksy'), { type: 'entity', kind: 'artist', id: 'banksy' });
  assert.deepEqual(topic('entity:gene'), { type: 'entity', kind: 'gene' });
  assert.deepEqual(topic('entity'), { type: 'entity' });
  assert.deepEqual(topic('list:followedArtists'), { type: 'list', list: 'followedArtists', params: {} });
  assert.deepEqual(topic('list:following/artist'), { type: 'list', list: 'following/artist', params: {} });
  assert.throws(() => topic('artist'), TypeError);
  assert.deepEqual(topic.list('following/artist'), { type: 'list', list: 'following/artist', params: {} });
  assert.deepEqual(topic.list('search', { q: 'x', page: 2 }), { type: 'list', list: 'search', params: { q: 'x', page: 2 } });
  assert.throws(() => topic.list(''), TypeError);
  assert.deepEqual(topic.entity(), { type: 'entity' });
  assert.deepEqual(topic.entity('gene'), { type: 'entity', kind: 'gene' });
  assert.deepEqual(topic.entity('artist', 'banksy'), { type: 'entity', kind: 'artist', id: 'banksy' });
  assert.throws(() => topic.entity(undefined, 'banksy'), TypeError);
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: '/run/user/7' }), '/run/user/7/netmodel/netmodel.sock');
  assert.equal(defaultSocketPath({}), `/tmp/netmodel-${process.getuid()}/netmodel.sock`);
});

test('StateStore drops states whose version is not newer, per entity and per list+params', () => {
  const store = new StateStore();
  assert.equal(store.accept(entity('a', 3)), true);
  assert.equal(store.accept(entity('a', 2)), false, 'older version dropped');
  assert.equal(store.accept(entity('a', 3)), false, 'same version is the same state');
  assert.equal(store.accept(entity('b', 1)), true, 'another entity has its own versions');
  assert.equal(store.accept({ ...entity('a', 1), kind: 'gene' }), true, 'kind is part of the key');
  assert.equal(store.accept(entity('a', 4)), true);
  assert.equal(store.get({ kind: 'artist', id: 'a' }).version, 4);

  const list = (params, version) => ({ list: 'following', params, state: 'loaded', items: [], hasMore: false, error: null, version });
  assert.equal(store.accept(list({ kind: 'artist', page: 1 }, 5)), true);
  assert.equal(store.accept(list({ page: 1, kind: 'artist' }, 4)), false, 'params compare by value, not key order');
  assert.equal(store.accept(list({ kind: 'gene', page: 1 }, 1)), true, 'other params, other list');
  assert.equal(store.size, 5);
  assert.notEqual(stateKey({ kind: 'a', id: 'b/c' }), stateKey({ kind: 'a/b', id: 'c' }));
});

test('subscription drops stale notifications from events and iterator', async (t) => {
  const fake = await fakeServer(t, (msg, reply) => {
    if (msg.method !== 'subscribe') return;
    reply({ jsonrpc: '2.0', id: msg.id, result: { subscription: 'x7', snapshot: [entity('a', 5)] } });
    // Out of order and repeated, as a coalescing or buggy server might send them.
    let seq = 0;
    const note = (state) => reply({ jsonrpc: '2.0', method: 'stateChanged', params: { subscription: 'x7', seq: ++seq, state } });
    note(entity('a', 4)); // older than the snapshot
    note(entity('a', 6));
    note(entity('a', 6)); // seen
    note(entity('b', 1));
    note(entity('a', 5)); // older
    note(entity('a', 7, { following: false }));
    note({ list: 'l', params: { p: 1 }, state: 'loaded', items: [], hasMore: false, error: null, version: 2 });
    note({ list: 'l', params: { p: 1 }, state: 'loading', items: [], hasMore: false, error: null, version: 1 });
  });
  const client = await NetmodelClient.connect({ path: fake.socketPath, reconnect: false, timeout: T });
  t.after(() => client.close());
  const events = [];
  client.on('stateChanged', (state, sub, seq) => events.push([state.id ?? state.list, state.version, sub.id, seq]));
  const sub = await client.subscribe('entity:artist/a');

  const last = await nextMatching(sub, (s) => s.list === 'l');
  assert.equal(last.version, 2);
  assert.deepEqual(events, [['a', 6, 'x7', 2], ['b', 1, 'x7', 4], ['a', 7, 'x7', 6], ['l', 2, 'x7', 7]]);
  // The store holds the newest state per key:
  assert.equal(sub.state('artist', 'a').version, 7);
  assert.equal(sub.state('artist', 'a').following, false);
  assert.equal(sub.list('l', { p: 1 }).version, 2);
  assert.equal(sub.lastSeq, 8);
});

test('the iterator coalesces per entity and keeps the order of first arrival', async (t) => {
  let send;
  const fake = await fakeServer(t, (msg, reply) => {
    if (msg.method === 'subscribe') {
      send = (seq, state) => reply({ jsonrpc: '2.0', method: 'stateChanged', params: { subscription: 's1', seq, state } });
      reply({ jsonrpc: '2.0', id: msg.id, result: { subscription: 's1', snapshot: [] } });
    }
    if (msg.method === 'unsubscribe') reply({ jsonrpc: '2.0', id: msg.id, result: { ok: true } });
  });
  const client = await NetmodelClient.connect({ path: fake.socketPath, reconnect: false, timeout: T });
  t.after(() => client.close());
  const sub = await client.subscribe('entity:artist');
  send(1, entity('a', 1));
  send(2, entity('b', 1));
  send(3, entity('a', 2));
  await waitFor(() => sub.lastSeq === 3, 'three notifications');
  const it = sub[Symbol.asyncIterator]();
  assert.deepEqual((await it.next()).value, entity('a', 2));
  assert.deepEqual((await it.next()).value, entity('b', 1));
  await sub.unsubscribe();
  assert.equal((await it.next()).done, true, 'iteration ends after unsubscribe');
});

test('timeout and AbortSignal send $/cancelRequest and reject at once', async (t) => {
  const fake = await fakeServer(t); // never answers
  const client = await NetmodelClient.connect({ path: fake.socketPath, reconnect: false });
  t.after(() => client.close());

  await assert.rejects(client.follow('artist', 'a', { await: true, timeout: 50 }), TimeoutError);
  const controller = new AbortController();
  const aborted = client.getFollowState('artist', 'a', { refresh: true, signal: controller.signal });
  controller.abort();
  await assert.rejects(aborted, { name: 'AbortError' });

  await waitFor(() => fake.received.length === 4, 'four messages');
  const [follow, cancel1, read, cancel2] = fake.received;
  assert.deepEqual(follow.params, { kind: 'artist', id: 'a', await: true });
  assert.deepEqual(cancel1, { jsonrpc: '2.0', method: '$/cancelRequest', params: { id: follow.id } });
  assert.deepEqual(read.params, { kind: 'artist', id: 'a', refresh: true });
  assert.deepEqual(cancel2, { jsonrpc: '2.0', method: '$/cancelRequest', params: { id: read.id } });
});

test('a dropped socket without reconnect fails pending calls and ends subscriptions with an error', async (t) => {
  const fake = await fakeServer(t, (msg, reply) => {
    if (msg.method === 'subscribe') reply({ jsonrpc: '2.0', id: msg.id, result: { subscription: 's1', snapshot: [] } });
  });
  const client = await NetmodelClient.connect({ path: fake.socketPath, reconnect: false });
  const sub = await client.subscribe('entity');
  const pending = client.follow('artist', 'a');
  const iterating = nextMatching(sub, () => false);
  const closed = new Promise((resolve) => client.once('close', resolve));
  await waitFor(() => fake.received.length === 2, 'the follow');
  fake.dropAll();
  await assert.rejects(pending, (e) => e instanceof ConnectionLostError && e.code === 'NETMODEL_CONNECTION_LOST');
  await assert.rejects(iterating, ConnectionLostError);
  await closed;
  assert.equal(client.connected, false);
  await assert.rejects(client.stats(), (e) => e.code === 'NETMODEL_CLOSED');
});

test('reconnecting gives up after maxAttempts: close, and subscriptions end with an error', async (t) => {
  const fake = await fakeServer(t, (msg, reply) => {
    if (msg.method === 'subscribe') reply({ jsonrpc: '2.0', id: msg.id, result: { subscription: 's1', snapshot: [] } });
  });
  const client = await NetmodelClient.connect({ path: fake.socketPath, reconnect: { initialDelayMs: 10, maxAttempts: 3 } });
  const sub = await client.subscribe('entity');
  const iterating = nextMatching(sub, () => false);
  const events = [];
  for (const e of ['disconnect', 'reconnect', 'close']) client.on(e, () => events.push(e));
  const closed = new Promise((resolve) => client.once('close', resolve));
  fake.server.close(); // no new connections: every attempt fails
  fake.dropAll();
  await waitFor(() => events.includes('disconnect'), 'disconnect');
  await assert.rejects(client.stats(), (e) => e.code === 'NETMODEL_NOT_CONNECTED');
  await closed;
  assert.deepEqual(events, ['disconnect', 'close']);
  await assert.rejects(iterating, ConnectionLostError);
  await assert.rejects(client.stats(), (e) => e.code === 'NETMODEL_CLOSED');
});

const listState = (params, version, extra = {}) => ({
  list: 'search', params, state: 'loaded', items: [], sections: [], hasMore: false, error: null, version, ...extra,
});

test('fetchList, getEntity and setInterfaceState: what is sent and what they resolve with', async (t) => {
  const fake = await fakeServer(t, (msg, reply) => {
    const result = {
      fetchList: listState(msg.params?.params ?? {}, 3),
      getEntity: entity(msg.params?.id, 4, { attributes: { name: 'N' } }),
      setInterfaceState: { accepted: msg.params?.items?.length },
    }[msg.method];
    reply({ jsonrpc: '2.0', id: msg.id, result });
  });
  const client = await NetmodelClient.connect({ path: fake.socketPath, reconnect: false, timeout: T });
  t.after(() => client.close());

  assert.deepEqual(await client.fetchList('search'), listState({}, 3));
  assert.deepEqual(await client.fetchList('search', { params: { q: 'x' }, page: 'next' }), listState({ q: 'x' }, 3));
  assert.deepEqual((await client.getEntity('artist', 'b')).attributes, { name: 'N' });
  await client.getEntity('artist', 'b', { refresh: true });
  const items = [entity('b', 1), { kind: 'gene', id: 'g', following: true, attributes: null }];
  assert.equal(await client.setInterfaceState(items, 'display'), 2);
  assert.equal(await client.setInterfaceState(new Set([{ kind: 'artist', id: 'c' }]), 'none'), 1);

  assert.deepEqual(fake.received.map((m) => [m.method, m.params]), [
    ['fetchList', { list: 'search' }],
    ['fetchList', { list: 'search', params: { q: 'x' }, page: 'next' }],
    ['getEntity', { kind: 'artist', id: 'b' }],
    ['getEntity', { kind: 'artist', id: 'b', refresh: true }],
    ['setInterfaceState', { items: [{ kind: 'artist', id: 'b' }, { kind: 'gene', id: 'g' }], state: 'display' }],
    ['setInterfaceState', { items: [{ kind: 'artist', id: 'c' }], state: 'none' }],
  ]);
});

test('list subscriptions: versions per list+params, coalesced in the iterator, restored after a reconnect', async (t) => {
  let connections = 0;
  const fake = await fakeServer(t, (msg, reply) => {
    if (msg.method !== 'subscribe') return;
    connections++;
    const name = `s${connections}`;
    const note = (seq, state) => reply({ jsonrpc: '2.0', method: 'stateChanged', params: { subscription: name, seq, state } });
    if (connections === 1) {
      reply({ jsonrpc: '2.0', id: msg.id, result: { subscription: name, snapshot: [entity('a', 1), listState({ a: 1, b: 2 }, 5)] } });
      note(1, listState({ b: 2, a: 1 }, 4, { state: 'loading' })); // older, keys in another order: dropped
      note(2, listState({ a: 1, b: 3 }, 1)); // another list: its own versions
      note(3, listState({ a: 1, b: 2 }, 6, { state: 'loading' }));
      note(4, listState({ a: 1, b: 2 }, 7, { items: [{ kind: 'artist', id: 'a', following: true, attributes: null }] }));
    } else {
      // A restarted server counts versions from 0 again.
      reply({ jsonrpc: '2.0', id: msg.id, result: { subscription: name, snapshot: [listState({ a: 1, b: 2 }, 1, { state: 'loading' })] } });
      note(1, listState({ a: 1, b: 2 }, 2));
    }
  });
  const client = await NetmodelClient.connect({ path: fake.socketPath, reconnect: { initialDelayMs: 10 }, timeout: T });
  t.after(() => client.close());
  const sub = await client.subscribe([topic.entity('artist', 'a'), topic.list('search', { a: 1, b: 2 })]);
  assert.deepEqual(fake.received[0].params.topics[1], { type: 'list', list: 'search', params: { a: 1, b: 2 } });
  await waitFor(() => sub.lastSeq === 4, 'four notifications');

  // The iterator holds one state per entity and list (the newest), in order of first
  // arrival: the snapshot's entity first, then the lists.
  const it = sub[Symbol.asyncIterator]();
  const entityFirst = (await it.next()).value;
  assert.deepEqual([entityFirst.kind, entityFirst.id, entityFirst.version], ['artist', 'a', 1]);
  const second = (await it.next()).value;
  assert.deepEqual([second.params, second.version, second.items.length], [{ a: 1, b: 2 }, 7, 1]);
  const first = (await it.next()).value;
  assert.deepEqual([first.params, first.version], [{ a: 1, b: 3 }, 1]);
  assert.equal(sub.list('search', { b: 2, a: 1 }).version, 7);
  assert.equal(sub.list('search', { a: 1, b: 3 }).version, 1);
  assert.equal(sub.list('search'), undefined);

  // After a reconnect the same topics are sent again and lower versions are taken.
  const reconnected = new Promise((resolve) => client.once('reconnect', resolve));
  fake.dropAll();
  await reconnected;
  assert.deepEqual(fake.received.at(-1).params.topics, sub.topics);
  const restored = await nextMatching(sub, (s) => s.list === 'search' && s.state === 'loaded');
  assert.equal(restored.version, 2);
  assert.equal(sub.id, 's2');
  assert.equal(sub.list('search', { a: 1, b: 2 }).version, 2);
});

test("client-made error codes sit outside JSON-RPC's reserved range, as in every netmodel client", () => {
  assert.deepEqual(Object.values(ClientErrorCodes), [-31999, -31998, -31997, -31996]);
  for (const c of Object.values(ClientErrorCodes)) assert.ok(!(c >= -32768 && c <= -32000), String(c));
  assert.equal(new ConnectionLostError('x').rpcCode, ClientErrorCodes.ConnectionLost);
  assert.equal(new ConnectionLostError('x', 'NETMODEL_NOT_CONNECTED').rpcCode, ClientErrorCodes.NotConnected);
  assert.equal(new TimeoutError('x').rpcCode, ClientErrorCodes.Timeout);
});
