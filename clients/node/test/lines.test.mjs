// Reading messages (issue 26, item 14): lines split right whatever the chunks, and one
// big message read in time linear in its size.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';
import { NetmodelClient } from '../index.js';
import { LineSplitter } from '../lib/lines.js';
import { REPO } from './helpers.mjs';

test('lines: whole whatever the chunks, a UTF-8 sequence split across two included', () => {
  const text = '{"a":"é"}\n\n{"b":"日本"}\r\n{"c":1}\n';
  const bytes = Buffer.from(text);
  for (let size = 1; size <= bytes.length; size++) {
    const lines = [];
    const splitter = new LineSplitter();
    for (let i = 0; i < bytes.length; i += size) splitter.push(bytes.subarray(i, i + size), (l) => lines.push(l));
    assert.deepEqual(lines, ['{"a":"é"}', '', '{"b":"日本"}\r', '{"c":1}'], `chunks of ${size}`);
  }
});

const python = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();

test('a 48 MB message costs about what parsing it does', { skip: python ? false : 'python3 not found', timeout: 120_000 }, async () => {
  const bytes = 48 * 1024 * 1024;
  const server = path.join(REPO, 'clients', 'python', 'bench', 'big_reply_server.py');
  const nm = await NetmodelClient.spawn({ bin: server, env: { ...process.env, BIG_REPLY_BYTES: String(bytes) }, timeout: 100_000 });
  try {
    const start = process.hrtime.bigint();
    const { blob } = await nm.call('big', {});
    const read = Number(process.hrtime.bigint() - start) / 1e6;
    assert.equal(blob.length, bytes / 4 + (bytes - 2 * (bytes / 4)));
    // What reading it must cost at least, measured here and now (the machine's speed
    // and load alike): making the bytes into text, and parsing that.
    const line = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { blob } }));
    const floorStart = process.hrtime.bigint();
    JSON.parse(line.toString('utf8'));
    const floor = Number(process.hrtime.bigint() - floorStart) / 1e6;
    // Linear reading is a small multiple of it (the pipe, the copies); quadratic
    // (searching the whole message again for each 64 KiB chunk) hundreds of times it.
    assert.ok(read < 6 * floor + 1000, `read in ${read.toFixed(0)} ms; text and parse alone take ${floor.toFixed(0)} ms`);
  } finally {
    nm.process.kill();
  }
});
