// Type-checks index.d.ts with `tsc` (Debian: node-typescript), when there is one:
// test/types/check.ts uses the types as hosts do, and its @ts-expect-error lines must fail.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
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

// As a host installs it: `netmodel-client` by name, through package.json `exports`, its
// types found under both the older and the node16 module resolution, and importable.
test('the package resolves by name: exports, types, import', { skip: tsc ? false : 'tsc not found (set TSC or install node-typescript)', timeout: 120_000 }, (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nm-pkg-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.resolve(here, '..'), path.join(dir, 'node_modules', 'netmodel-client'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  fs.copyFileSync(path.join(here, 'types', 'node-shim.d.ts'), path.join(dir, 'node-shim.d.ts'));
  fs.writeFileSync(
    path.join(dir, 'host.ts'),
    "import { NetmodelClient, topic, type Stats } from 'netmodel-client';\n" +
      'export const f = (s: Stats): number => s.entitiesPending;\n' +
      "export const t = topic('stats');\n" +
      'export type C = NetmodelClient;\n',
  );
  for (const resolution of ['node', 'node16']) {
    const config = {
      compilerOptions: {
        strict: true, noEmit: true, target: 'es2022', lib: ['es2022', 'dom'], types: [],
        module: resolution === 'node16' ? 'node16' : 'es2022', moduleResolution: resolution,
        preserveSymlinks: true,
      },
      files: ['node-shim.d.ts', 'host.ts'],
    };
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(config));
    const r = spawnSync(tsc, ['-p', path.join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `tsc (moduleResolution ${resolution}) failed:\n${r.stdout}${r.stderr}`);
  }
  const run = spawnSync(process.execPath, ['--input-type=module', '-e',
    "const m = await import('netmodel-client'); console.log(typeof m.NetmodelClient, JSON.stringify(m.topic('stats')));"],
    { cwd: dir, encoding: 'utf8' });
  assert.equal(run.stdout.trim(), 'function {"type":"stats"}', run.stderr);
});
