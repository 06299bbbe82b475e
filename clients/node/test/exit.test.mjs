// A script that is done exits, even without close(): the client holds Node's event
// loop open only while something waits on it (a request, an iterator awaiting its
// next state, a 'change' listener), as the README says (Clients: leaving without close()).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { NetmodelClient } from '../index.js';
import { BIN, connectWhenReady, needsBinary, pidAlive, sandbox, waitFor } from './helpers.mjs';

const INDEX = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../index.js');

// NM_HOW: spawn | connect. NM_THEN: what is left when the script ends.
const SCRIPT = `
  const { NetmodelClient } = await import(process.env.NM_INDEX);
  const nm = process.env.NM_HOW === 'spawn'
    ? await NetmodelClient.spawn({ bin: process.env.NM_BIN, args: ['--state-dir', process.env.NM_STATE], stderr: 'ignore' })
    : await NetmodelClient.connect({ path: process.env.NM_SOCKET });
  const sub = await nm.subscribe('entity:artist/banksy');
  if (process.env.NM_THEN === 'listener') {
    // A listener keeps it alive, as a server's does, until unsubscribed.
    sub.on('change', (s) => { if (!s.pending && s.following) { console.log('settled'); sub.unsubscribe(); } });
  }
  await nm.follow('artist', 'banksy');
  if (nm.pid) console.log('pid', nm.pid);
  if (process.env.NM_THEN === 'iterator') {
    for await (const s of sub) if (!s.pending && s.following) { console.log('settled'); break; }
  }
  console.log('done');
`;

function run(box, how, then) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    env: { ...box.env, NM_INDEX: INDEX, NM_BIN: BIN, NM_STATE: box.stateDir, NM_SOCKET: box.socket, NM_HOW: how, NM_THEN: then },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = new Promise((resolve) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('hung');
    }, 8000);
    child.once('exit', (c) => {
      clearTimeout(t);
      resolve(c);
    });
  });
  return { code, out: () => out };
}

for (const how of ['spawn', 'connect']) {
  for (const then of ['nothing', 'iterator', 'listener']) {
    test(`${how}: a script that is done exits without close() (left: ${then})`, { skip: needsBinary, timeout: 30_000 }, async (t) => {
      const box = sandbox(t);
      if (how === 'connect') {
        box.startServer();
        await (await connectWhenReady({ path: box.socket })).close(); // listening
      }
      const r = run(box, how, then);
      assert.equal(await r.code, 0, `exit code (output: ${r.out()})`);
      assert.match(r.out(), /done\n$/);
      if (then !== 'nothing') assert.match(r.out(), /settled/);
      const pid = Number(/pid (\d+)/.exec(r.out())?.[1]);
      if (pid) await waitFor(() => !pidAlive(pid), `spawned server ${pid} to exit`, 5000);
    });
  }
}

test('a spawned server that never started says so, with its last stderr lines', { skip: needsBinary, timeout: 30_000 }, async (t) => {
  const box = sandbox(t);
  box.startServer(); // owns the state folder: a second server refuses it
  await (await connectWhenReady({ path: box.socket })).close();
  const nm = await NetmodelClient.spawn({ bin: BIN, args: ['--state-dir', box.stateDir], env: box.env }); // stderr: ours
  t.after(() => nm.close());
  const error = await nm.stats().then(
    () => assert.fail('stats answered'),
    (e) => e,
  );
  assert.equal(error.name, 'ConnectionLostError');
  assert.match(error.message, /never started \(exit code 1\)/);
  assert.match(error.message, /in use/);
});
