#!/usr/bin/env node
// How long the client takes to read one big message (issue 26, item 14):
//
//   node clients/node/bench/big_message.mjs [MB…]      (default: 5 30)
//
// The "server" is clients/python/bench/big_reply_server.py, which answers a request
// with one message of MB megabytes; the figure is from sending the request to holding
// the parsed reply, best of three.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NetmodelClient } from '../index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const server = path.resolve(here, '../../python/bench/big_reply_server.py');
const sizes = process.argv.slice(2).map(Number);
for (const mb of sizes.length ? sizes : [5, 30]) {
  const bytes = Math.round(mb * 1024 * 1024);
  const nm = await NetmodelClient.spawn({ bin: server, env: { ...process.env, BIG_REPLY_BYTES: String(bytes) } });
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const start = process.hrtime.bigint();
    const result = await nm.call('big', {});
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.blob.length < bytes / 2) throw new Error('short reply');
    best = Math.min(best, ms);
  }
  console.log(`node: ${mb} MB message read in ${(best / 1000).toFixed(2)} s`);
  nm.process.kill();
}
process.exit(0);
