// Shared by the tests (not a test itself: importing it runs nothing).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NetmodelClient } from '../index.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** Bound for every single wait in a test. */
export const T = 10_000;

/** $NETMODEL_BIN, else the debug (or release) build, else `netmodel` on PATH; undefined if none. */
export const BIN = (() => {
  if (process.env.NETMODEL_BIN) return process.env.NETMODEL_BIN;
  for (const build of ['debug', 'release']) {
    const p = path.join(REPO, '.build', build, 'netmodel');
    if (fs.existsSync(p)) return p;
  }
  return spawnSync('sh', ['-c', 'command -v netmodel'], { encoding: 'utf8' }).stdout.trim() || undefined;
})();
/** For node:test's `skip` option: a reason when there is no server binary to test against. */
export const needsBinary = BIN ? false : 'netmodel binary not found (set NETMODEL_BIN or build .build/debug/netmodel)';

/**
 * A private folder for one test: state dir, socket path and an env whose XDG folders
 * point into it, removed (with every server started by startServer) after the test.
 */
export function sandbox(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nm-node-'));
  fs.mkdirSync(path.join(dir, 'run'), { mode: 0o700 });
  const children = [];
  t.after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    stateDir: path.join(dir, 'state'),
    socket: path.join(dir, 'nm.sock'),
    env: { ...process.env, XDG_RUNTIME_DIR: path.join(dir, 'run'), XDG_STATE_HOME: path.join(dir, 'xdg-state'), XDG_CONFIG_HOME: path.join(dir, 'xdg-config') },
    /** `netmodel serve --socket=PATH --no-stdio --state-dir DIR ARGS…`, killed after the test. */
    startServer(args = []) {
      const child = spawn(BIN, ['serve', `--socket=${this.socket}`, '--no-stdio', '--state-dir', this.stateDir, ...args], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: this.env,
      });
      child.stderrText = '';
      child.stderr.on('data', (d) => (child.stderrText += d));
      children.push(child);
      return child;
    },
    spawnClient(args = [], options = {}) {
      return NetmodelClient.spawn({ bin: BIN, args: ['--state-dir', this.stateDir, ...args], env: this.env, stderr: 'ignore', timeout: T, ...options });
    },
  };
}

/** Connect once the server's socket answers. */
export async function connectWhenReady(options) {
  const deadline = Date.now() + T;
  for (;;) {
    try {
      return await NetmodelClient.connect({ timeout: T, ...options });
    } catch (error) {
      if (Date.now() > deadline || !['ENOENT', 'ECONNREFUSED'].includes(error.code)) throw error;
      await sleep(30);
    }
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves with pred's first truthy value, polled every 20 ms; rejects after `ms`. */
export async function waitFor(pred, what, ms = T) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The first state of `sub`'s iterator that satisfies pred (within T). */
export async function nextMatching(sub, pred, ms = T) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('no matching state in time')), ms);
  });
  const loop = (async () => {
    for await (const state of sub) if (pred(state)) return state;
    throw new Error('subscription ended');
  })();
  try {
    return await Promise.race([loop, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** True if the process exists and is not a zombie. */
export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * A stand-in server on a Unix socket for unit tests: `handle(msg, reply)` sees every
 * message a client sends; `reply(obj)` writes one NDJSON line back. `received` keeps all.
 */
export async function fakeServer(t, handle = () => {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nm-fake-'));
  const socketPath = path.join(dir, 's.sock');
  const received = [];
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const reply = (obj) => socket.write(JSON.stringify(obj) + '\n');
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const msg = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        received.push(msg);
        handle(msg, reply);
      }
    });
  });
  await new Promise((resolve) => server.listen(socketPath, resolve));
  t.after(() => {
    dropAll();
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  /** Drops every connection (the server may still listen). */
  const dropAll = () => {
    for (const s of sockets) s.destroy();
  };
  return { socketPath, received, server, dropAll };
}
