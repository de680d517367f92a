import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI } from '../helpers/cli';
import { makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

/** Runs the built CLI with exactly `env` (no inherited PATH), node by its absolute path. */
const run = (args: string[], env: Record<string, string>) =>
  execa(process.execPath, [CLI, ...args], { env, extendEnv: false, reject: false, all: true, stdin: 'ignore' });

/**
 * `verdict doctor MANIFEST` and `verdict lint`: what cannot run here is said before anything runs (an engine not on
 * PATH with its install command, a check naming a file that is nowhere), task by task; and neither runs anything the
 * manifest or its repository names.
 */
describe('verdict doctor MANIFEST and lint: can this manifest run here', function () {
  this.timeout(120000);
  let dir: string;
  let env: Record<string, string>;
  let bin: string;
  beforeEach(() => {
    dir = tempDir();
    bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // PATH: the system's folders and an empty one for test engines; none of the agent CLIs (the cache is not on it).
    const system = (process.env.PATH ?? '').split(':').filter((p) => !p.includes('verdict-test-clis'));
    env = { PATH: [bin, ...system].join(':'), HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'xdg'), VERDICT_HOME: path.join(dir, 'home') };
  });

  /** A repository with a test file, and a manifest of three tasks: ready, an engine not installed, a check file nowhere. */
  function fixture(): string {
    const repo = makeRepo(path.join(dir, 'repo'), { 'test/a.test.mjs': "import test from 'node:test';\ntest('a', () => {});\n" });
    return writeManifest(repo, {
      worktrees: true,
      tasks: [
        scriptTask('ready', 'echo a > a.txt', 'node --test test/a.test.mjs', { expect_files: ['a.txt'] }),
        { ...scriptTask('no-engine', 'x', 'node --test test/a.test.mjs'), engine: 'codex' },
        scriptTask('no-test', 'echo b > b.txt', 'node --test test/b.test.mjs', { expect_files: ['b.txt'] }),
      ],
    });
  }

  it('says, task by task, which can run: ready, CANNOT RUN with the install command, WILL FAIL naming the file; exit 1', async () => {
    if (fs.existsSync('/usr/local/bin/codex') || (env.PATH ?? '').split(':').some((d) => fs.existsSync(path.join(d, 'codex'))))
      throw new Error("codex must not be on this test's PATH");
    const manifest = fixture();
    const r = await run(['doctor', manifest], env);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stdout, new RegExp(`^manifest: ${manifest.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    assert.match(r.stdout, /^ {2}ready {6}ready \(script\)$/m);
    assert.match(r.stdout, /^ {2}no-engine {2}CANNOT RUN\n\s+engine codex: `codex` is not on PATH — npm i -g @openai\/codex$/m);
    assert.match(r.stdout, /^ {2}no-test {4}WILL FAIL\n\s+The check names test\/b\.test\.mjs, which is neither in the repository/m);
    assert.match(r.stdout, /^this manifest cannot run here as it is: 1 of 3 task\(s\) cannot run; 1 would fail on a file their check names$/m);
    const json = await run(['doctor', manifest, '--json'], env);
    assert.equal(json.exitCode, 1);
    const report = JSON.parse(json.stdout) as { manifest: { ok: boolean; tasks: { key: string; state: string; reasons: string[] }[] } };
    assert.deepEqual(
      report.manifest.tasks.map((t) => [t.key, t.state]),
      [
        ['ready', 'ready'],
        ['no-engine', 'cannot-run'],
        ['no-test', 'will-fail'],
      ],
    );
    assert.equal(report.manifest.ok, false);
  });

  it('once the engine is installed and the test exists: every task ready, exit 0; without MANIFEST doctor is as before', async () => {
    const manifest = fixture();
    fs.writeFileSync(path.join(bin, 'codex'), '#!/bin/sh\necho codex 0.0.0\n', { mode: 0o755 });
    const repo = path.dirname(manifest);
    fs.writeFileSync(path.join(repo, 'test', 'b.test.mjs'), '');
    const r = await run(['doctor', manifest], env);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stdout, /^this manifest can run here: 3 task\(s\) ready$/m);
    const plain = await run(['doctor'], env);
    assert.equal(plain.exitCode, 0, plain.all);
    assert.doesNotMatch(plain.stdout, /^manifest:/m);
  });

  it('an engine "auto" manifest without a route of its own is judged with the config file\'s route, as its run loads it', async () => {
    // The default config file (XDG_CONFIG_HOME/verdict/config.json): an engine on PATH and the route auto picks from.
    const config = path.join(dir, 'xdg', 'verdict', 'config.json');
    fs.mkdirSync(path.dirname(config), { recursive: true });
    const cheap = { binary: 'bash', argv: ['-c', '{spec}'], install: 'a test fixture', output: 'claude', retry_context: 'file', model: 'acme/cheap' };
    fs.writeFileSync(config, JSON.stringify({ engines: { cheap }, route: { from: ['cheap:acme/cheap'], explore: 0 } }));
    const repo = makeRepo(path.join(dir, 'repo'));
    const manifest = writeManifest(repo, {
      engine: 'auto',
      tasks: [{ key: 'routed', task_type: 'parser', spec: 'echo ok > out.txt', check: 'grep -q ok out.txt', verified: 'out.txt says ok' }],
    });
    const r = await run(['doctor', manifest], env);
    assert.doesNotMatch(r.stdout, /needs a route block/, r.all);
    assert.match(r.stdout, /^ {2}routed {2}ready \(cheap\)$/m, r.all);
  });

  it('a manifest that does not load: its errors with file:line:column, exit 1', async () => {
    const file = path.join(dir, 'bad.swarm.json');
    fs.writeFileSync(file, '{ "tasks": [ { "key": "a", "engine": "nope", "spec": "x", "check": "false" } ] }');
    const r = await run(['doctor', file], env);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stdout, /bad\.swarm\.json:1:\d+: error \[unknown-engine\]/);
  });

  it('verdict lint warns the same (engine-not-installed with the install command, check-file-missing) and exits 0: warnings only', async () => {
    const manifest = fixture();
    const r = await run(['lint', manifest], env);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(
      r.stdout,
      /:\d+:\d+: warning \[engine-not-installed\] \(no-engine\) This task runs on engine "codex", whose command `codex` is not on PATH.*npm i -g @openai\/codex/,
    );
    assert.match(r.stdout, /:\d+:\d+: warning \[check-file-missing\] \(no-test\) The check names test\/b\.test\.mjs/);
  });

  it('hostile repository: lint and doctor MANIFEST run nothing it names — not the check, setup or spec, not its git fsmonitor or hooks', async () => {
    const marker = path.join(dir, 'ran');
    const evil = path.join(dir, 'evil.sh');
    fs.writeFileSync(evil, `#!/bin/sh\necho "$0 $*" >> '${marker}'\n`, { mode: 0o755 });
    const repo = makeRepo(path.join(dir, 'repo'), { 'run-check.sh': `#!/bin/sh\n'${evil}' check-script\n` });
    fs.chmodSync(path.join(repo, 'run-check.sh'), 0o755);
    // Every program git could be made to start from the repository's own config, each writing the marker.
    fs.appendFileSync(
      path.join(repo, '.git', 'config'),
      `[core]\n\tfsmonitor = ${evil}\n\thooksPath = ${path.join(repo, '.git', 'evil-hooks')}\n\tpager = ${evil}\n[diff]\n\texternal = ${evil}\n`,
    );
    fs.mkdirSync(path.join(repo, '.git', 'evil-hooks'));
    for (const hook of ['post-checkout', 'reference-transaction', 'post-index-change', 'pre-commit'])
      fs.writeFileSync(path.join(repo, '.git', 'evil-hooks', hook), `#!/bin/sh\n'${evil}' hook\n`, { mode: 0o755 });
    const manifest = writeManifest(repo, {
      worktrees: true,
      setup: `'${evil}' setup`,
      tasks: [scriptTask('t', `'${evil}' spec`, `./run-check.sh && '${evil}' check`, { expect_files: ['ignored/out.txt'] })],
    });
    fs.writeFileSync(path.join(repo, '.gitignore'), 'ignored/\n');
    for (const args of [
      ['lint', manifest],
      ['lint', manifest, '--json'],
      ['doctor', manifest],
      ['doctor', manifest, '--json'],
    ]) {
      const r = await run(args, env);
      assert.ok(r.exitCode === 0 || r.exitCode === 1, `${args.join(' ')}: ${r.all}`);
      assert.equal(fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : '', '', `${args.join(' ')} ran something the repository names`);
    }
  });
});
