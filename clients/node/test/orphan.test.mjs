// A spawned server never outlives the Node process that spawned it.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { BIN, needsBinary, pidAlive, sandbox, T, waitFor } from './helpers.mjs';

const INDEX = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../index.js');

// A host: spawns the server with the client, prints its pid, then either idles (to be
// killed) or exits without calling close().
const HOST = `
  const { NetmodelClient } = await import(process.env.NM_INDEX);
  const c = await NetmodelClient.spawn({ bin: process.env.NM_BIN, args: ['--state-dir', process.env.NM_STATE], stderr: 'ignore' });
  await c.follow('artist', 'a', { await: true }); // the server is up and serving
  console.log(c.pid);
  if (process.env.NM_THEN === 'exit') process.exit(0);
  setInterval(() => {}, 1000);
`;

const exited = (child) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', r));

async function host(box, then) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', HOST], {
    env: { ...box.env, NM_INDEX: INDEX, NM_BIN: BIN, NM_STATE: box.stateDir, NM_THEN: then },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const pid = await waitFor(() => /^\d+\n/.test(out) && Number(out), 'the host to print the server pid');
  return { child, pid };
}

for (const [then, what] of [
  ['kill', 'is SIGKILLed'],
  ['exit', 'exits without close()'],
]) {
  test(`no orphan: the server exits when its host ${what}`, { skip: needsBinary, timeout: 60_000 }, async (t) => {
    const box = sandbox(t);
    const { child, pid } = await host(box, then);
    t.after(() => pidAlive(pid) && process.kill(pid, 'SIGKILL'));
    if (then === 'kill') {
      assert.ok(pidAlive(pid), 'the server runs while its host does');
      child.kill('SIGKILL');
    }
    await exited(child);
    await waitFor(() => !pidAlive(pid), `server pid ${pid} to be gone`, 5000);
  });
}

// Like HOST, but the server is started by hand with --no-stdio, so it ignores EOF on stdin.
const DEAF_HOST = `
  const { spawn } = await import('node:child_process');
  const { NM_BIN, NM_SOCKET, NM_STATE } = process.env;
  const args = ['serve', '--no-stdio', '--socket=' + NM_SOCKET, '--state-dir', NM_STATE];
  spawn(NM_BIN, args, { stdio: ['pipe', 'ignore', 'ignore'] }).on('spawn', function () { console.log(this.pid); });
  setInterval(() => {}, 1000);
`;

test('sanity: the orphan check sees a server that outlives its host', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  // After a SIGKILL of the host (no exit hooks run) a server that ignores its stdin
  // must still be there, or the tests above could not fail.
  const box = sandbox(t);
  const child = spawn(process.execPath, ['--input-type=module', '-e', DEAF_HOST], {
    env: { ...box.env, NM_BIN: BIN, NM_SOCKET: box.socket, NM_STATE: box.stateDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const pid = await waitFor(() => /^\d+\n/.test(out) && Number(out), 'the server pid');
  t.after(() => pidAlive(pid) && process.kill(pid, 'SIGKILL'));
  child.kill('SIGKILL');
  await exited(child);
  await new Promise((r) => setTimeout(r, 1000));
  assert.ok(pidAlive(pid), 'a --no-stdio server survives its host');
  process.kill(pid, 'SIGTERM');
  await waitFor(() => !pidAlive(pid), 'the server to stop', T);
});
