#!/usr/bin/env node
// A follow button in the terminal.
//
//   node examples/follow_button.mjs [KIND ID] [--socket=PATH] [-- SERVE-ARGS…]
//
// Uses the netmodel server running for you (on the default socket, or PATH), else
// starts one ($NETMODEL_BIN, else `netmodel`) that listens there too, and shows one
// button: Enter toggles it, q (or Ctrl-D) quits, saying where the follow ended.
// SERVE-ARGS are for a server it starts; to watch pending states and rollbacks (with no
// server running, or it is used as it is):
//
//   node examples/follow_button.mjs artist banksy -- --simulate latency=500,failure=0.3,status=422
//
// (Without status= a simulated failure is a network error, which is retried four times
// before it rolls back, so rollbacks are rare.) Kill and restart a server it found
// running to see the button reconnect.

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
const socket = own.find((a) => a.startsWith('--socket='));
const [kind = 'artist', id = 'banksy'] = own.filter((a) => !a.startsWith('--'));

const client = await NetmodelClient.connectOrSpawn({ path: socket?.split('=')[1], args: serveArgs, timeout: 60_000 });
if (client.spawned) console.log(`started netmodel serve (pid ${client.pid})`);
else console.log(`using the running netmodel${serveArgs.length ? ` (not started: ${serveArgs.join(' ')} unused)` : ''}`);

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
if (shown.pending) {
  // The last toggle is on its way: say where it ends.
  for await (const s of sub) if (s.version >= shown.version && !s.pending) { show(s); break; }
}
const outcome = shown.error ? `failed: ${shown.error.message}` : shown.pending ? 'pending' : 'confirmed';
console.log(`${shown.following ? 'following' : 'not following'} ${id} (${outcome})`);
await client.close();
