// The client connects only to a socket whose folder is the user's alone (issue 16):
// an impostor server stands where netmodel should be and must see no connection.
// Tests that give folders to `nobody` need root, as in CI.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { NetmodelClient, UntrustedSocketError } from '../index.js';
import { connectWhenReady, needsBinary, sandbox, sleep, waitFor } from './helpers.mjs';

const NOBODY = 65534;
const needsRoot = process.geteuid() === 0 ? false : 'needs root to give folders to another user';

/** A folder `name` with `mode` (set after mkdir: the umask must not count) in a fresh temp folder. */
function folder(t, name, mode = 0o700) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nm-trust-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  fs.chmodSync(dir, mode);
  return dir;
}

/** Not netmodel: listens on `socketPath` and counts the connections it gets. */
async function impostor(t, socketPath) {
  const server = net.createServer((socket) => {
    server.connections += 1;
    socket.destroy();
  });
  server.connections = 0;
  await new Promise((resolve) => server.listen(socketPath, resolve));
  t.after(() => server.close());
  return server;
}

async function refusal(socketPath) {
  const error = await NetmodelClient.connect({ path: socketPath, reconnect: false }).then(
    (client) => {
      client.close();
      assert.fail('connected');
    },
    (e) => e,
  );
  assert.ok(error instanceof UntrustedSocketError, String(error));
  assert.equal(error.code, 'NETMODEL_UNTRUSTED_SOCKET');
  return error.message;
}

test('a socket folder others can write is refused', async (t) => {
  const dir = folder(t, 'open', 0o777);
  const fake = await impostor(t, path.join(dir, 's.sock'));
  assert.equal(
    await refusal(path.join(dir, 's.sock')),
    `refusing to connect to ${dir}/s.sock: its folder ${dir} can be written by its group and other users (mode 0777), ` +
      `who could have put any server there; run \`chmod 700 ${dir}\``,
  );
  assert.equal(fake.connections, 0);
});

test('a group-writable socket folder is refused', async (t) => {
  const dir = folder(t, 'group', 0o770);
  await impostor(t, path.join(dir, 's.sock'));
  assert.match(await refusal(path.join(dir, 's.sock')), /can be written by its group \(mode 0770\)/);
});

test('a symlinked socket folder is refused', async (t) => {
  const dir = folder(t, 'real');
  const link = path.join(path.dirname(dir), 'link');
  fs.symlinkSync(dir, link);
  const fake = await impostor(t, path.join(dir, 's.sock'));
  assert.match(await refusal(path.join(link, 's.sock')), new RegExp(`its folder ${link} is a symbolic link`));
  assert.equal(fake.connections, 0);
});

test('a socket folder of another user is refused', { skip: needsRoot }, async (t) => {
  const dir = folder(t, 'theirs');
  fs.chownSync(dir, NOBODY, NOBODY);
  const fake = await impostor(t, path.join(dir, 's.sock'));
  assert.match(await refusal(path.join(dir, 's.sock')), /belongs to uid 65534, not to this user \(uid 0\)/);
  assert.equal(fake.connections, 0);
});

test('reconnecting keeps away from an impostor in a folder others can now write', { skip: needsBinary, timeout: 60_000 }, async (t) => {
  const box = sandbox(t);
  const server = box.startServer();
  const c = await connectWhenReady({ path: box.socket, reconnect: { initialDelayMs: 20, maxDelayMs: 100 } });
  t.after(() => c.close());
  await c.stats();
  server.kill('SIGTERM');
  await waitFor(() => !c.connected, 'the drop');
  await waitFor(() => !fs.existsSync(box.socket), 'the server to remove its socket');
  fs.chmodSync(box.dir, 0o777);
  const fake = await impostor(t, box.socket);
  await sleep(1000); // ten tries or so
  assert.equal(fake.connections, 0);
  assert.equal(c.connected, false);
});
