#!/usr/bin/env node
// A follow button in the terminal.
//
//   node examples/follow_button.mjs [KIND ID] [--connect[=SOCKET]] [-- SERVE-ARGS…]
//
// Starts `netmodel serve` ($NETMODEL_BIN, else `netmodel`) with a temporary state folder,
// or with --connect uses a running server's socket, and shows one button: Enter
// toggles it, q (or Ctrl-D) quits. To watch pending states and rollbacks:
//
//   node examples/follow_button.mjs artist banksy -- --simulate latency=500,failure=0.3,status=422
//
// (Without status= a simulated failure is a network error, which is retried four times
// before it rolls back, so rollbacks are rare.)

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { NetmodelClient, RPCError } from '../index.js';

function render(state) {
  const label = state.following === null ? '[    ?     ]' : state.following ? '[ Following ✓ ]' : '[ + Follow ]';
  let line = `${state.kind}/${state.id}  ${label}`;
  if (state.pending) line += ' …';
  else if (state.error) line += `   ✗ ${state.error.message}`; // kept while a new try is pending
  return `${line}   (v${state.version})`;
}

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const serveArgs = dash < 0 ? [] : argv.slice(dash + 1);
const own = dash < 0 ? argv : argv.slice(0, dash);
const connect = own.find((a) => a.startsWith('--connect'));
const [kind = 'artist', id = 'banksy'] = own.filter((a) => !a.startsWith('--'));

let client;
if (connect) {
  client = await NetmodelClient.connect({ path: connect.split('=')[1], timeout: 60_000 });
} else {
  if (!serveArgs.includes('--state-dir')) {
    // Don't touch the user's real follows by default.
    serveArgs.push('--state-dir', fs.mkdtempSync(path.join(os.tmpdir(), 'follow-button-')));
  }
  client = await NetmodelClient.spawn({ args: serveArgs, timeout: 60_000 });
}

const sub = await client.subscribe({ type: 'entity', kind, id });
let shown = sub.snapshot[0];
const show = (state) => {
  // The reply to a toggle and a notification may carry the same state: show it once.
  if (state.version > shown.version) {
    shown = state;
    console.log(render(state));
  }
};
sub.on('change', show);
client.on('disconnect', () => console.log('(server gone; reconnecting…)'));
client.on('reconnect', () => {
  shown = { ...shown, version: -1 }; // a restarted server counts versions from 0 again
  show(sub.state(kind, id) ?? shown);
});

console.log('Enter toggles, q quits.');
console.log(render(shown));
const input = readline.createInterface({ input: process.stdin });
for await (const line of input) {
  if (line.trim() === 'q') break;
  try {
    // The reply is the optimistic state; the settled one arrives as a notification.
    show(await client.setFollowState(kind, id, !shown.following));
  } catch (error) {
    console.log(error instanceof RPCError ? `error ${error.code}: ${error.message}` : `error: ${error.message}`);
  }
}
input.close();
await client.close();
