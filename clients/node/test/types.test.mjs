// Type-checks index.d.ts with `tsc` (Debian: node-typescript), when there is one:
// test/types/check.ts uses the types as hosts do, and its @ts-expect-error lines must fail.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const tsc = process.env.TSC || spawnSync('sh', ['-c', 'command -v tsc'], { encoding: 'utf8' }).stdout.trim();

test('index.d.ts type-checks (tsc --strict)', { skip: tsc ? false : 'tsc not found (set TSC or install node-typescript)', timeout: 120_000 }, () => {
  const r = spawnSync(tsc, ['-p', path.join(here, 'types', 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(r.error, undefined);
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
