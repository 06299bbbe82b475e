// The result types (lib/results.d.ts, generated from schema/openrpc.json by
// scripts/gen-protocol, and index.d.ts built on them) are what the real server sends
// (issue 26, item 12): every reply of every method and every notification, from the
// local backend and from the REST one against examples/artsy/server.py, is written into
// a TypeScript file as a literal of its type, which `tsc --strict` must accept — a
// member missing, one the types do not name, or a value of another type fails it.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import test from 'node:test';
import { BIN, needsBinary, REPO, T } from './helpers.mjs';

const tsc = process.env.TSC || spawnSync('sh', ['-c', 'command -v tsc'], { encoding: 'utf8' }).stdout.trim();
const python = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();
const skip = needsBinary || (tsc ? false : 'tsc not found (set TSC or install node-typescript)') || (python ? false : 'python3 not found (the demo API)');

// `netmodel serve ARGS` over stdio, spoken to as raw JSON lines.
function raw(args) {
  const child = spawn(BIN, ['serve', ...args], { stdio: ['pipe', 'pipe', 'ignore'] });
  const replies = {};
  const notifications = {};
  const waiting = new Map();
  let nextId = 0;
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line);
    if (msg.method) (notifications[msg.method] ??= []).push(msg.params);
    else waiting.get(msg.id)?.(msg);
  });
  return {
    replies,
    notifications,
    call(method, params) {
      const id = ++nextId;
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }) + '\n');
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer to ${method}`)), T);
        waiting.set(id, (msg) => {
          clearTimeout(timer);
          waiting.delete(id);
          if (msg.error) return reject(new Error(`${method}: ${JSON.stringify(msg.error)}`));
          (replies[method] ??= []).push(msg.result);
          resolve(msg.result);
        });
      });
    },
    async waitFor(method) {
      const deadline = Date.now() + T;
      while (!notifications[method]) {
        assert.ok(Date.now() < deadline, `no ${method} notification`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => child.kill('SIGKILL'),
  };
}

async function everyMethod(server, kind, id, list) {
  await server.call('initialize', { clientInfo: { name: 'result-types-test' } });
  await server.call('rpc.discover');
  await server.call('configure', {});
  const sub = await server.call('subscribe', { topics: [{ type: 'entity', kind }, { type: 'list', list }, { type: 'stats' }, { type: 'mutations' }] });
  await server.call('follow', { kind, id, await: true });
  await server.call('getFollowState', { kind, id, refresh: true });
  await server.call('setFollowState', { kind, id, following: false, await: true });
  await server.call('unfollow', { kind, id });
  await server.call('sync', { timeoutMs: 10000 });
  await server.call('follow', { kind, id, await: true });
  await server.call('getEntity', { kind, id, refresh: true });
  const page = await server.call('fetchList', { list });
  const items = page.items.slice(0, 5).map((i) => ({ kind: i.kind, id: i.id }));
  await server.call('setInterfaceState', { items: items.length ? items : [{ kind, id }], state: 'visible' });
  await server.waitFor('stateChanged');
  await server.waitFor('statsChanged');
  await server.waitFor('mutationOutcome');
  await server.call('getMutations', { since: 0 });
  await server.call('stats');
  await server.call('inspect');
  await server.call('unsubscribe', { subscription: sub.subscription });
  await server.call('shutdown');
}

async function demoApi(dir) {
  const portFile = path.join(dir, 'artsy.port');
  const api = spawn(python, [path.join(REPO, 'examples', 'artsy', 'server.py'), '--port', '0', '--port-file', portFile, '--quiet'], { stdio: 'ignore' });
  const deadline = Date.now() + T;
  while (!(fs.existsSync(portFile) && fs.readFileSync(portFile, 'utf8').trim())) {
    assert.ok(api.exitCode === null && Date.now() < deadline, 'the demo API did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  const config = JSON.parse(fs.readFileSync(path.join(REPO, 'examples', 'artsy', 'config.json'), 'utf8'));
  config.environments.local = `http://127.0.0.1:${fs.readFileSync(portFile, 'utf8').trim()}`;
  config.environment = 'local';
  fs.writeFileSync(path.join(dir, 'artsy.json'), JSON.stringify(config));
  return { api, config: path.join(dir, 'artsy.json') };
}

const NOTIFICATION_TYPES = {
  stateChanged: 'StateChangedParams',
  statsChanged: 'Results.StatsParams',
  mutationOutcome: 'Results.MutationOutcomeParams',
};

test('real replies and notifications are the generated types (tsc --strict)', { skip, timeout: 120_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nm-types-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const captured = [];
  const local = raw(['--state-dir', path.join(dir, 'local')]);
  try {
    await everyMethod(local, 'artist', 'banksy', 'following/artist');
    captured.push(['local', local]);
  } finally {
    local.close();
  }
  const { api, config } = await demoApi(dir);
  t.after(() => api.kill());
  const rest = raw(['--state-dir', path.join(dir, 'rest'), '--backend', 'rest', '--config', config]);
  try {
    await everyMethod(rest, 'artist', 'banksy', 'followedArtists');
    captured.push(['rest', rest]);
  } finally {
    rest.close();
  }

  const index = path.join(REPO, 'clients', 'node', 'index.js');
  const lines = [`import type { MethodResults, Results, StateChangedParams } from ${JSON.stringify(index)};`, ''];
  let n = 0;
  const sent = new Set();
  for (const [backend, server] of captured) {
    for (const [method, replies] of Object.entries(server.replies)) {
      for (const reply of replies) lines.push(`// ${backend}: ${method}`, `export const r${n++}: MethodResults[${JSON.stringify(method)}] = ${JSON.stringify(reply)};`);
    }
    for (const [method, notes] of Object.entries(server.notifications)) {
      assert.ok(NOTIFICATION_TYPES[method], `a notification with no type: ${method}`);
      for (const params of notes) lines.push(`// ${backend}: ${method}`, `export const n${n++}: ${NOTIFICATION_TYPES[method]} = ${JSON.stringify(params)};`);
    }
    const stats = server.replies.stats.at(-1);
    if ('evicted' in stats.lists) sent.add('lists.evicted');
    if ('pagingFailures' in stats.lists) sent.add('lists.pagingFailures');
    if ('http' in stats.backend) sent.add('backend.http');
    if ('entitiesEvicted' in stats) sent.add('entitiesEvicted');
  }
  // The members issue 26 found missing from the hand-written types are among them.
  assert.deepEqual([...sent].sort(), ['backend.http', 'entitiesEvicted', 'lists.evicted', 'lists.pagingFailures']);
  // Every method the types name was called, from each backend.
  const methods = fs.readFileSync(path.join(REPO, 'clients', 'node', 'lib', 'results.d.ts'), 'utf8')
    .split('export interface MethodResults {')[1].split('}')[0].match(/^\s+"?([\w./$]+)"?:/gm).map((m) => m.trim().replace(/"|:/g, ''));
  for (const [backend, server] of captured) assert.deepEqual(Object.keys(server.replies).sort(), [...methods].sort(), backend);

  fs.writeFileSync(path.join(dir, 'replies.ts'), lines.join('\n') + '\n');
  fs.copyFileSync(path.join(REPO, 'clients', 'node', 'test', 'types', 'node-shim.d.ts'), path.join(dir, 'node-shim.d.ts'));
  const tsconfig = {
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'es2022', moduleResolution: 'node', lib: ['es2022', 'dom'], types: [] },
    files: ['node-shim.d.ts', 'replies.ts'],
  };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  const r = spawnSync(tsc, ['-p', path.join(dir, 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc refused real replies:\n${r.stdout}${r.stderr}`);
});
