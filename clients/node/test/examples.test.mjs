// The README examples run, twice in a row (the second time the artist is followed
// already), and type-check with `tsc --strict` where there is a tsc.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { BIN, needsBinary, REPO } from './helpers.mjs';

const CLIENT = path.join(REPO, 'clients', 'node');
const READMES = [path.join(REPO, 'README.md'), path.join(CLIENT, 'README.md')];
const tsc = process.env.TSC || spawnSync('sh', ['-c', 'command -v tsc'], { encoding: 'utf8' }).stdout.trim();

function examples(readme, marker) {
  const blocks = [...fs.readFileSync(readme, 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks.filter((b) => b.includes(marker));
}

const FOLLOW = "nm.follow('artist', 'banksy')";
const LISTS = "nm.fetchList('following/artist')";
const cases = [
  ...READMES.map((r) => ({ name: `${path.relative(REPO, r)}: follow button`, readme: r, marker: FOLLOW, says: /following/ })),
  { name: 'clients/node/README.md: lists', readme: READMES[1], marker: LISTS, says: /loaded \d+ followed/ },
];

// A folder where `import 'netmodel-client'` finds this client, with private XDG folders
// that both runs share (the second one finds the first one's follow).
function sandbox(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nm-examples-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(CLIENT, path.join(dir, 'node_modules', 'netmodel-client'));
  fs.mkdirSync(path.join(dir, 'run'), { mode: 0o700 });
  const env = { ...process.env, NETMODEL_BIN: BIN, XDG_STATE_HOME: path.join(dir, 'state'), XDG_RUNTIME_DIR: path.join(dir, 'run') };
  return { dir, env };
}

for (const { name, readme, marker, says } of cases) {
  test(`${name} runs twice`, { skip: needsBinary, timeout: 90_000 }, (t) => {
    const found = examples(readme, marker);
    assert.equal(found.length, 1, `one example with ${marker}`);
    const { dir, env } = sandbox(t);
    const file = path.join(dir, 'example.mjs');
    fs.writeFileSync(file, found[0]);
    for (const run of [1, 2]) {
      const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 0, `run ${run} (signal ${r.signal}):\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, says, `run ${run} printed`);
    }
  });
}

test('README examples type-check (tsc --strict)', { skip: tsc ? false : 'tsc not found (set TSC or install node-typescript)', timeout: 120_000 }, (t) => {
  const { dir } = sandbox(t);
  const files = [path.join(CLIENT, 'test', 'types', 'node-shim.d.ts')];
  cases.forEach(({ readme, marker }, i) => {
    const f = path.join(dir, `example${i}.ts`);
    fs.writeFileSync(f, `export {};\n${examples(readme, marker)[0]}`);
    files.push(f);
  });
  const config = {
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'es2022', moduleResolution: 'node', lib: ['es2022', 'dom'], types: [] },
    files,
  };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(config));
  const r = spawnSync(tsc, ['-p', path.join(dir, 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
