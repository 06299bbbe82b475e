// The README examples and examples/follow_button.mjs run, twice in a row (the second
// time the artist is followed already), also while the user's server runs (they connect
// to it: issue 26, item 13), end with a line saying what happened, and type-check with
// `tsc --strict` where there is a tsc.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
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
  ...READMES.map((r) => ({ name: `${path.relative(REPO, r)}: follow button`, readme: r, marker: FOLLOW, last: /^following banksy \(confirmed\)$/ })),
  { name: 'clients/node/README.md: lists', readme: READMES[1], marker: LISTS, last: /^loaded \d+ followed artists; \S+: (details loaded|no details)$/ },
];

// A folder where `import 'netmodel-client'` finds this client, with private XDG folders
// that both runs share (the second one finds the first one's follow).
function sandbox(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nm-examples-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(CLIENT, path.join(dir, 'node_modules', 'netmodel-client'));
  fs.mkdirSync(path.join(dir, 'run'), { mode: 0o700 });
  const env = { ...process.env, NETMODEL_BIN: BIN, XDG_STATE_HOME: path.join(dir, 'state'), XDG_RUNTIME_DIR: path.join(dir, 'run'), XDG_CONFIG_HOME: path.join(dir, 'config') };
  return { dir, env };
}

const lastLine = (out) => out.trimEnd().split('\n').at(-1);

for (const { name, readme, marker, last } of cases) {
  test(`${name} runs twice`, { skip: needsBinary, timeout: 90_000 }, (t) => {
    const found = examples(readme, marker);
    assert.equal(found.length, 1, `one example with ${marker}`);
    const { dir, env } = sandbox(t);
    const file = path.join(dir, 'example.mjs');
    fs.writeFileSync(file, found[0]);
    for (const run of [1, 2]) {
      const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 0, `run ${run} (signal ${r.signal}):\n${r.stdout}\n${r.stderr}`);
      assert.match(lastLine(r.stdout), last, `run ${run} printed:\n${r.stdout}`);
    }
  });

  test(`${name} uses the server already running`, { skip: needsBinary, timeout: 90_000 }, async (t) => {
    const { dir, env } = sandbox(t);
    const file = path.join(dir, 'example.mjs');
    fs.writeFileSync(file, examples(readme, marker)[0]);
    await withUserServer(t, env, () => {
      const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 0, `signal ${r.signal}:\n${r.stdout}\n${r.stderr}`);
      assert.match(lastLine(r.stdout), last, r.stdout);
      if (marker === FOLLOW) assert.equal(r.stdout.split('\n')[0], 'using the running netmodel', r.stdout);
    });
  });
}

const BUTTON = path.join(CLIENT, 'examples', 'follow_button.mjs');

test('examples/follow_button.mjs runs twice: follow, unfollow, quit', { skip: needsBinary, timeout: 90_000 }, (t) => {
  const { dir, env } = sandbox(t);
  for (const run of [1, 2]) {
    const r = spawnSync(process.execPath, [BUTTON, 'artist', 'kahlo'], { cwd: dir, env, input: '\n\nq\n', encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, `run ${run} (signal ${r.signal}):\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /^started netmodel serve \(pid \d+\)$/m);
    assert.match(r.stdout, /Following ✓/);
    assert.equal(lastLine(r.stdout), 'not following kahlo (confirmed)', r.stdout);
  }
});

test('examples/follow_button.mjs uses the server already running', { skip: needsBinary, timeout: 90_000 }, async (t) => {
  const { dir, env } = sandbox(t);
  await withUserServer(t, env, () => {
    const r = spawnSync(process.execPath, [BUTTON, 'artist', 'kahlo'], { cwd: dir, env, input: '\nq\n', encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, `signal ${r.signal}:\n${r.stdout}\n${r.stderr}`);
    assert.equal(r.stdout.split('\n')[0], 'using the running netmodel', r.stdout);
    assert.equal(lastLine(r.stdout), 'following kahlo (confirmed)', r.stdout);
  });
});

// `netmodel serve --socket --no-stdio` on env's default socket and state folder (its user
// service), for the length of `body`.
async function withUserServer(t, env, body) {
  const server = spawn(BIN, ['serve', '--socket', '--no-stdio'], { env, stdio: 'ignore' });
  t.after(() => server.kill('SIGKILL'));
  const socket = path.join(env.XDG_RUNTIME_DIR, 'netmodel', 'netmodel.sock');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise((resolve) => {
      const c = net.createConnection(socket, () => (c.destroy(), resolve(true)));
      c.on('error', () => resolve(false));
    });
    if (up) break;
    assert.ok(server.exitCode === null && Date.now() < deadline, 'netmodel serve did not listen');
    await new Promise((r) => setTimeout(r, 20));
  }
  body();
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
