// The shared conformance vectors (clients/conformance/vectors.json), fed to this
// client's own state logic; the Python and Neovim suites run the same file.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import test from 'node:test';
import { ClientErrorCodes, ConnectionLostError, ErrorCodes, RPCError, Subscription, TimeoutError, topic } from '../index.js';
import * as errors from '../lib/errors.js';
import { defaultSocketPath, paramsKey, stateKey, withHelpers } from '../lib/state.js';
import { REPO } from './helpers.mjs';

const VECTORS = JSON.parse(fs.readFileSync(`${REPO}/clients/conformance/vectors.json`, 'utf8'));
const STATES = VECTORS.states;
const copy = (name) => withHelpers(structuredClone(STATES[name]));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function nameOf(state) {
  for (const [name, s] of Object.entries(STATES)) {
    if (s.version !== state.version) continue;
    if ('list' in s ? s.list === state.list && same(s.params, state.params) : s.kind === state.kind && s.id === state.id) {
      return name;
    }
  }
  assert.fail(`delivered a state no vector names: ${JSON.stringify(state)}`);
}

// What a Subscription needs of its client here.
const client = { _hold() {}, unsubscribe() {} };

for (const v of VECTORS.deliver) {
  test(`deliver: ${v.name}`, async () => {
    const sub = new Subscription(client, 's1', [], v.snapshot.map(copy), v.instance);
    const seen = [];
    sub.on('change', (s) => seen.push(s));
    await new Promise((resolve) => setImmediate(resolve)); // the held snapshot is let go
    v.steps.forEach((step, i) => {
      if (step.notify) sub._deliver(copy(step.notify), i + 1);
      else sub._resubscribed(`s${i + 2}`, step.reconnect.snapshot.map(copy), step.reconnect.instance ?? undefined);
    });
    assert.deepEqual(seen.map(nameOf), v.expect);
  });
}

test('topics: shorthands and the topic sent', () => {
  for (const v of VECTORS.topics) {
    if (v.error) assert.throws(() => topic(v.spec), TypeError, v.spec);
    else assert.deepEqual(JSON.parse(JSON.stringify(topic(v.spec))), v.topic, v.spec);
  }
});

test('encode: empty params are objects', () => {
  for (const v of VECTORS.encode) {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: v.method, params: v.params });
    for (const t of v.contains) assert.ok(line.includes(t), `${v.name}: ${line}`);
    for (const t of v.absent) assert.ok(!line.includes(t), `${v.name}: ${line}`);
  }
});

test('errors: classes and codes', () => {
  for (const v of VECTORS.errors) {
    const err = RPCError.from(v.error);
    assert.deepEqual([err.constructor.name, err.code], [v.class, v.code]);
    if ('state_version' in v) assert.equal(err.state.version, v.state_version);
  }
});

test('client codes', () => {
  const c = VECTORS.client_codes;
  assert.deepEqual(
    [ClientErrorCodes.ConnectionLost, ClientErrorCodes.Timeout, ClientErrorCodes.NotConnected, ClientErrorCodes.Cancelled],
    [c.CONNECTION_LOST, c.TIMEOUT, c.NOT_CONNECTED, c.CANCELLED],
  );
  assert.equal(new ConnectionLostError('x').rpcCode, c.CONNECTION_LOST);
  assert.equal(new TimeoutError('x').rpcCode, c.TIMEOUT);
});

test('needs credentials', () => {
  for (const v of VECTORS.needs_credentials) assert.equal(withHelpers(structuredClone(v.state)).needsCredentials, v.expect);
});

test('list keys: canonical params, nulls dropped', () => {
  for (const v of VECTORS.list_keys) {
    assert.equal(paramsKey(v.params), v.key, v.name);
    assert.equal(stateKey({ list: 'search', params: v.params }), `list\0search\0${v.key}`, v.name);
    // a subscription finds a list's state by the params its caller gave
    const state = { list: 'search', params: JSON.parse(v.key), version: 1 };
    const sub = new Subscription(client, 's1', [], [state], 'i1');
    assert.equal(sub.list('search', v.params), state, v.name);
  }
});

test('default socket', () => {
  for (const v of VECTORS.default_socket) {
    assert.equal(defaultSocketPath(v.env), v.path.replace('{uid}', String(os.userInfo().uid)), JSON.stringify(v.env));
  }
});

// The generated table (lib/protocol.js, from schema/openrpc.json by scripts/gen-protocol)
// is what the client's public names are.
const SCHEMA = JSON.parse(fs.readFileSync(`${REPO}/schema/openrpc.json`, 'utf8'));
const EXT = SCHEMA['x-netmodel-protocol'];

test('error codes and classes are the table', () => {
  const renamed = EXT.errorNames.renamed;
  const table = Object.fromEntries(Object.entries(SCHEMA.components.errors).map(([n, e]) => [renamed[n] ?? n, e.code]));
  assert.deepEqual({ ...ErrorCodes }, table);
  assert.deepEqual({ ...ClientErrorCodes }, EXT.clientErrors.codes);
  for (const [name, code] of Object.entries(table)) {
    assert.equal(typeof errors[name], 'function', name);
    assert.equal(RPCError.from({ code, message: 'x' }).constructor, errors[name], name);
  }
});

test('topic shorthands are the table', () => {
  for (const f of EXT.topicShorthands.forms) assert.deepEqual(topic(f.shorthand), f.topic, f.shorthand);
  const forms = EXT.topicShorthands.forms.map((f) => f.shorthand);
  assert.throws(() => topic('nope'), { message: new RegExp(`${forms.slice(0, -1).join(', ')} or ${forms.at(-1)}`) });
});
