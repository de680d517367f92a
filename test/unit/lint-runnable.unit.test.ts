import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Finding, RuleId } from '../../extension/core/manifest/findings';
import { assertRange, col, ctx, manifest, task } from './lint-helpers';
import { lintManifestText } from '../../extension/core/run/manifest';

/** The rules that say what cannot run here before it runs: engine-not-installed and check-file-missing. */
describe('lint: what cannot run here', () => {
  let dir: string;
  let bin: string;
  let file: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-lint-runnable-'));
    bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    const repo = path.join(dir, 'repo');
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
    fs.mkdirSync(path.join(repo, 'test'));
    fs.writeFileSync(path.join(repo, 'test', 'a.test.mjs'), '');
    fs.writeFileSync(path.join(repo, 'run-tests.sh'), '');
    file = path.join(repo, 'team.swarm.json');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** An executable file `name` in the test's PATH folder. */
  const install = (name: string) => {
    fs.writeFileSync(path.join(bin, name), '#!/bin/sh\nexit 0\n');
    fs.chmodSync(path.join(bin, name), 0o755);
  };
  const lint = async (rule: RuleId, text: string, pathEnv: string | null = bin): Promise<Finding[]> =>
    (await lintManifestText(text, file, { ...ctx, pathEnv: pathEnv ?? undefined })).filter((f) => f.rule === rule);

  describe('engine-not-installed', () => {
    it('warns at the engine when its binary is not on PATH, with the install command', async () => {
      const t = task('a', { engine: 'codex' });
      const text = manifest([t]);
      const found = await lint('engine-not-installed', text);
      assert.equal(found.length, 1);
      assert.equal(found[0]?.severity, 'warning');
      assert.equal(found[0]?.taskKey, 'a');
      assertRange(text, found[0], 4, col(t, '"codex"'), '"codex"');
      assert.match(found[0]?.message ?? '', /`codex` is not on PATH.*npm i -g @openai\/codex/);
    });

    it('says nothing once the binary is on PATH, nor when no PATH is given (the start gate)', async () => {
      const text = manifest([task('a', { engine: 'codex' })]);
      assert.deepEqual(await lint('engine-not-installed', text, null), []);
      install('codex');
      assert.deepEqual(await lint('engine-not-installed', text), []);
    });

    it('a file named like the binary that is not executable does not count', async () => {
      fs.writeFileSync(path.join(bin, 'codex'), '');
      assert.equal((await lint('engine-not-installed', manifest([task('a', { engine: 'codex' })]))).length, 1);
    });

    it('names the default engine at the key, and each fallback and reviewer engine once per task', async () => {
      install('codex');
      const t = task('a', { fallback: ['claude'], review: { engines: ['gemini', 'claude'] } });
      const text = manifest([t, task('b', { engine: 'codex', review: { engines: ['gemini'] } })]);
      const found = await lint('engine-not-installed', text);
      assert.deepEqual(
        found.map((f) => [f.taskKey, /engine "(\w+)"/.exec(f.message)?.[1]]),
        [
          ['a', 'claude'],
          ['a', 'gemini'],
          ['b', 'gemini'],
        ],
      );
      assertRange(text, found[0], 4, col(t, '"claude"'), '"claude"');
      assert.match(found[1]?.message ?? '', /^A reviewer runs on engine "gemini"/);
      const bare = task('c', { engine: undefined });
      const text2 = manifest([bare]);
      assert.deepEqual(await lint('engine-not-installed', text2), [], 'the default engine (codex) is installed');
      fs.rmSync(path.join(bin, 'codex'));
      const dflt = await lint('engine-not-installed', text2);
      assert.equal(dflt.length, 1);
      assertRange(text2, dflt[0], 4, col(bare, '"c"'), '"c"');
    });

    it("lints every engine a workflow section names, saying each role; one engine in two roles is said as the rule's order has it", async () => {
      install('bash'); // the script engine's
      const v = task('v', { engine: 'script', validate: { engine: 'gemini', check: 'true', engines: [{ engine: 'gemini' }, { engine: 'codex' }] } });
      const c = task('c', { engine: 'script', council: { members: [{ engine: 'codex' }, { engine: 'gemini' }], chair: { engine: 'codex', check: 'true' } } });
      const p = task('p', {
        engine: 'script',
        spec: 'x {file}',
        phases: { files: ['a'], implement: { engine: 'codex' }, test: { engine: 'gemini', check: 'true' } },
      });
      const k = task('k', { engine: 'script', review: { engines: ['codex'] }, critique: { critics: [{ engine: 'codex' }, { engine: 'gemini' }] } });
      const found = await lint('engine-not-installed', manifest([v, c, p, k]));
      assert.deepEqual(
        found.map((f) => `${f.taskKey} ${/^(.*) runs on engine "(\w+)"/.exec(f.message)?.slice(1).join(' ')}`),
        [
          'v A worker gemini',
          'v A worker codex',
          'c A council member codex',
          'c A council member gemini',
          'p The implementer codex',
          'p The test phase gemini',
          'k A reviewer codex',
          'k A critic gemini',
        ],
      );
    });

    it('leaves an unknown engine to unknown-engine', async () => {
      assert.deepEqual(await lint('engine-not-installed', manifest([task('a', { engine: 'nope' })])), []);
    });
  });

  describe('check-file-missing', () => {
    const WT = { run_name: 't', worktrees: true };

    it('warns at a test file the check runs that the repository does not hold', async () => {
      const t = task('a', { check: 'node --test test/a.test.mjs test/b.test.mjs' });
      const text = manifest([t], WT);
      const found = await lint('check-file-missing', text);
      assert.equal(found.length, 1);
      assert.equal(found[0]?.severity, 'warning');
      assertRange(text, found[0], 4, col(t, 'test/b.test.mjs'), 'test/b.test.mjs');
      assert.match(found[0]?.message ?? '', /names test\/b\.test\.mjs, which is neither in the repository .* nor in any task's expect_files/);
    });

    it('a script the check runs, and a folder it names, are looked for too', async () => {
      const found = await lint('check-file-missing', manifest([task('a', { check: 'bash checks/verify.sh && ./run-tests.sh && pytest tests/' })], WT));
      assert.deepEqual(
        found.map((f) => /names (\S+),/.exec(f.message)?.[1]),
        ['checks/verify.sh', 'tests/'],
      );
    });

    it('a file some task expects (or include copies) is not missing', async () => {
      const text = manifest(
        [task('make', { expect_files: ['test/b.test.mjs'] }), task('use', { check: 'node --test test/b.test.mjs && cat .env', after: ['make'] })],
        { ...WT, include: ['.env'] },
      );
      assert.deepEqual(await lint('check-file-missing', text), []);
    });

    it('patterns, code, redirections, outputs, variables, built files and a folder change are not judged', async () => {
      const checks = [
        "grep -q 'a/b.txt' test/a.test.mjs",
        "python3 -c 'import x/y.py'",
        'node -e "require(\'./lib/x.js\')"',
        'node --test test/a.test.mjs > out/log.txt 2>err/e.txt',
        'mkdir -p out/x && touch out/x/y.txt',
        'node --test "$VERDICT_INPUTS/a/x.test.mjs"',
        'npm run build && node dist/cli.js',
        'cd sub && node --test t/x.test.mjs',
        'test -n "$(ls)" && echo ok.txt',
      ];
      for (const check of checks) assert.deepEqual(await lint('check-file-missing', manifest([task('a', { check })], WT)), [], check);
    });

    it('warns at a literal protect entry that names nothing; globs and ! entries are not judged', async () => {
      const t = task('a', { protect: ['fixtures/data.json', 'fixtures/**', '!tests/x.py', 'run-tests.sh'] });
      const text = manifest([t], WT);
      const found = await lint('check-file-missing', text);
      assert.equal(found.length, 1);
      assertRange(text, found[0], 4, col(t, '"fixtures/data.json"'), '"fixtures/data.json"');
      assert.match(found[0]?.message ?? '', /"protect" names fixtures\/data\.json/);
      const run = await lint('check-file-missing', manifest([task('a')], { ...WT, protect: ['nope.txt'] }));
      assert.deepEqual(
        run.map((f) => f.taskKey),
        [null],
      );
    });

    it('says nothing in plain mode (the task dir starts empty) or outside a git repository', async () => {
      assert.deepEqual(await lint('check-file-missing', manifest([task('a', { check: 'node --test test/b.test.mjs' })])), []);
      fs.rmSync(path.join(dir, 'repo', '.git'), { recursive: true });
      assert.deepEqual(await lint('check-file-missing', manifest([task('a', { check: 'node --test test/b.test.mjs' })], WT)), []);
    });

    it('looks for files from the top of the repository when repo names a folder inside it', async () => {
      fs.mkdirSync(path.join(dir, 'repo', 'pkg'));
      const text = manifest([task('a', { check: 'node --test test/a.test.mjs' })], { ...WT, repo: 'pkg' });
      assert.deepEqual(await lint('check-file-missing', text), []);
    });

    it('only looks: a script the check names is never run, even one that exists', async () => {
      const marker = path.join(dir, 'ran');
      fs.writeFileSync(path.join(dir, 'repo', 'evil.sh'), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
      const text = manifest([task('a', { check: `./evil.sh && bash evil.sh && touch '${marker}'`, setup: `touch '${marker}'` })], WT);
      assert.deepEqual(await lint('check-file-missing', text), []);
      assert.equal(fs.existsSync(marker), false);
    });
  });
});
