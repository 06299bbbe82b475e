// connectOrSpawn (issue 26, item 13): the server running for the user when there is one,
// else one spawned that listens on the socket too. Against the real binary.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import test from 'node:test';
import { ConnectionLostError, NetmodelClient } from '../index.js';
import { BIN, connectWhenReady, needsBinary, nextMatching, sandbox, T } from './helpers.mjs';

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return !/^\S+ \S+ Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/\(.*\)/, 'x'));
  } catch {
    return false;
  }
};

test('connects to a server already running on the socket', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const s = sandbox(t);
  const server = s.startServer();
  (await connectWhenReady({ path: s.socket })).close();
  // What the README example did: a server of its own, refused the user's state folder.
  const own = await s.spawnClient();
  await assert.rejects(own.stats(), (e) => e instanceof ConnectionLostError && /never started/.test(e.message));
  await own.close();

  const nm = await NetmodelClient.connectOrSpawn({ path: s.socket, bin: BIN, timeout: T });
  assert.equal(nm.spawned, false);
  assert.equal(nm.process, null);
  const state = await nm.follow('artist', 'banksy', { await: true });
  assert.equal(state.confirmed, true);
  assert.equal((await nm.stats()).connections.list[0].transport, 'socket');
  await nm.close();
  assert.equal(server.exitCode, null); // the user's server goes on
});

test('spawns a server sharing the socket when none runs', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const s = sandbox(t);
  assert.equal(fs.existsSync(s.socket), false);
  const options = { path: s.socket, bin: BIN, args: ['--state-dir', s.stateDir], env: s.env, stderr: 'ignore', timeout: T };
  const first = await NetmodelClient.connectOrSpawn(options);
  assert.equal(first.spawned, true);
  const pid = first.pid;
  assert.ok(alive(pid));
  // A second one finds the first's server on the socket rather than start another.
  const second = await NetmodelClient.connectOrSpawn(options);
  assert.equal(second.spawned, false);
  await second.follow('artist', 'kaws', { await: true });
  assert.equal((await first.getFollowState('artist', 'kaws')).following, true);
  await second.close();
  await first.close();
  assert.equal(alive(pid), false); // a spawned server ends with its client
});

test('spawns over a stale socket file', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const s = sandbox(t);
  // A crashed server's file: bound, nobody listening (Node removes its own on close).
  const bound = spawnSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', s.socket]);
  assert.equal(bound.status, 0, String(bound.stderr));
  assert.equal(fs.existsSync(s.socket), true);
  const nm = await NetmodelClient.connectOrSpawn({ path: s.socket, bin: BIN, args: ['--state-dir', s.stateDir], env: s.env, stderr: 'ignore', timeout: T });
  assert.equal(nm.spawned, true);
  assert.equal((await nm.follow('artist', 'banksy', { await: true })).confirmed, true);
  await nm.close();
});

test('a server that cannot start says why', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const s = sandbox(t);
  const options = { path: s.socket, bin: BIN, args: ['--state-dir', s.stateDir, '--no-such-option'], env: s.env, stderr: 'pipe', timeout: T };
  await assert.rejects(NetmodelClient.connectOrSpawn(options), (e) => e instanceof ConnectionLostError && /never started \(exit code/.test(e.message));
});

// A host that closes its socket connection ends its own session, not the daemon others
// share (issue 27 §6): another client goes on being served and told of changes.
test('closing a socket session leaves a shared daemon running', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const s = sandbox(t);
  const server = s.startServer();
  const other = await connectWhenReady({ path: s.socket });
  const sub = await other.subscribe('entity:artist/kaws');
  for (const lspStyle of [false, true]) {
    const leaving = await NetmodelClient.connect({ path: s.socket, timeout: T });
    await leaving.follow('artist', 'banksy', { await: true });
    if (lspStyle) {
      // LSP's way out, as a host may say it: it ends that session only.
      assert.equal(await leaving.call('shutdown'), null);
      leaving.notify('exit');
    }
    await leaving.close();
  }
  assert.equal(server.exitCode, null, 'closing a socket client stopped the daemon');
  assert.equal((await other.stats()).connections.open, 1);
  await other.follow('artist', 'kaws');
  await nextMatching(sub, (state) => state.following === true);
  await other.close();
  assert.equal(server.exitCode, null);
});
