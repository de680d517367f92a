import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// Seal, then check: what a check writes is never committed, and the next attempt starts from the tree the
// last one sealed. The check here is hostile in the useful way: it leaves a token that makes the next check pass, junk,
// build output and a log (ignored), and it edits a tracked file; none of it may reach the retry or the PASS commit.

async function run(file: string, home: string, flags: string[] = []) {
  return cli(['run', file, '--home', home, '--no-dashboard', ...flags], { env: { HOME: path.join(path.dirname(home), 'user-home') } });
}

/** Passes at once when an earlier check left `pass-token`; otherwise leaves it (and more), then judges feature.txt. */
const CHECK = [
  'if [ -f pass-token ]; then echo "pass-token found: passing without looking"; exit 0; fi',
  'touch pass-token; echo junk > junk.txt; mkdir -p build && echo obj > build/out.o; echo log > test.log',
  'sed -i "s/app/changed by the check/" NOTES.md; sed -i "s/wip/check was here/" feature.txt; mkdir -p node_modules/dep && echo check > node_modules/dep/check.js',
  'grep -x done feature.txt',
].join('\n');

/** Attempts 1 and 2 leave work in progress; attempt 3 finishes. Each prints what it finds first. */
const WORKER = [
  'echo "--- sees: $(ls -A | grep -v "^\\.git$" | sort | tr "\\n" " ")"',
  'echo "--- notes: $(cat NOTES.md | tr "\\n" "|")"',
  'echo "--- feature: $(cat feature.txt 2>/dev/null | tr "\\n" "|")"',
  'echo "--- deps: $(ls node_modules/dep 2>/dev/null | tr "\\n" " ")"',
  'if [ "$VERDICT_ATTEMPT" = 3 ]; then echo done > feature.txt; else echo "wip $VERDICT_ATTEMPT" > feature.txt; fi',
].join('\n');

function sees(log: string, what: string): string {
  return new RegExp(`--- ${what}: (.*)`).exec(log)?.[1]?.trim() ?? '';
}

describe('check writes: discarded before the retry, never committed', function () {
  this.timeout(180000);

  it("worktree mode: the retry sees no token, junk, build output or log of the check and the NOTES as sealed; setup's ignored node_modules stays; the PASS commit holds only the work", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'NOTES.md': '# app\n', '.gitignore': 'build/\n*.log\nnode_modules/\n' });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      setup: 'mkdir -p node_modules/dep && echo setup > node_modules/dep/index.js',
      tasks: [scriptTask('t', WORKER, CHECK, { max_attempts: 3, guard: false })],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => row.verdict),
      ['FAIL', 'FAIL', 'PASS'],
      'a leaked pass-token would have passed attempt 2',
    );
    for (const row of rows.slice(1)) {
      const log = fs.readFileSync(String(row.worker_log), 'utf8');
      assert.equal(sees(log, 'sees'), '.gitignore NOTES.md feature.txt node_modules', `attempt ${String(row.attempt)}`);
      assert.equal(sees(log, 'notes'), '# app|');
      assert.equal(sees(log, 'feature'), `wip ${Number(row.attempt) - 1}|`, "the worker's own file as sealed, without the check's line");
      // An ignored folder that was there at the seal (setup's) is kept as it is, the check's file in it included.
      assert.match(sees(log, 'deps'), /^(check\.js )?index\.js$/);
    }
    assert.match(
      r.all ?? '',
      /before attempt 2: what the previous check wrote was discarded: removed build\/, junk\.txt, pass-token, test\.log; put back NOTES\.md, feature\.txt/,
    );
    const branch = String(rows[2]?.branch);
    assert.deepEqual(git(repo, 'ls-tree', '-r', '--name-only', branch).split('\n').sort(), ['.gitignore', 'NOTES.md', 'feature.txt']);
    assert.equal(git(repo, 'show', `${branch}:feature.txt`), 'done');
    assert.equal(git(repo, 'show', `${branch}:NOTES.md`), '# app');
  });

  it("plain mode: the retry sees the dir as sealed (the check's files removed, its edits put back)", async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'w'));
    const file = writeManifest(dir, {
      workdir: 'w',
      setup: 'echo "# app" > NOTES.md; mkdir -p node_modules/dep && echo setup > node_modules/dep/index.js',
      tasks: [scriptTask('t', WORKER, CHECK, { max_attempts: 3, guard: false })],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => row.verdict),
      ['FAIL', 'FAIL', 'PASS'],
    );
    for (const row of rows.slice(1)) {
      const log = fs.readFileSync(String(row.worker_log), 'utf8');
      assert.equal(sees(log, 'sees'), 'NOTES.md feature.txt node_modules', `attempt ${String(row.attempt)}`);
      assert.equal(sees(log, 'notes'), '# app|');
      assert.equal(sees(log, 'feature'), `wip ${Number(row.attempt) - 1}|`);
    }
    assert.match(
      r.all ?? '',
      /before attempt 2: what the previous check wrote was discarded: removed build, junk\.txt, pass-token, test\.log; put back NOTES\.md, feature\.txt/,
    );
  });

  it("--baseline, sandboxed: the baseline's check sees neither VERDICT_HOME nor a plain run's workdir, as no check does", async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    // Passes only where it sees nothing of VERDICT_HOME's records (other runs' rows, other tasks' worktrees) or the workdir.
    const look = (...where: string[]) => `${where.map((w) => `if ls ${w} >/dev/null 2>&1; then echo "sees ${w}"; exit 1; fi; `).join('')}test -s out.txt`;
    const wt = writeManifest(
      dir,
      { worktrees: true, repo, tasks: [scriptTask('t', 'echo ok > out.txt', look(path.join(home, 'runs')), { max_attempts: 1 })] },
      'wt.swarm.json',
    );
    const plain = writeManifest(
      dir,
      { workdir: 'w', tasks: [scriptTask('p', 'echo ok > out.txt', look(path.join(home, 'runs'), path.join(dir, 'w', '.verdict-made')), { max_attempts: 1 })] },
      'plain.swarm.json',
    );
    for (const file of [wt, plain]) {
      const r = await run(file, home, ['--baseline']);
      assert.equal(r.exitCode, 0, r.all);
    }
    const baselineLogs = fs
      .readdirSync(path.join(home, 'runs'))
      .flatMap((id) => ['t', 'p'].map((k) => path.join(home, 'runs', id, 'tasks', k, 'baseline', 'check.log')))
      .filter((f) => fs.existsSync(f));
    assert.equal(baselineLogs.length, 2);
    for (const f of baselineLogs) assert.doesNotMatch(fs.readFileSync(f, 'utf8'), /sees /, f);
    assert.deepEqual(
      readRows(home).map((x) => x.verdict),
      ['PASS', 'PASS'],
    );
  });

  it("--baseline: what the baseline's check writes reaches neither attempt 1 nor its seal (worktree and plain mode)", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'NOTES.md': '# app\n', '.gitignore': 'build/\n*.log\nnode_modules/\n' });
    const wt = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', WORKER, CHECK, { max_attempts: 1, guard: false })] }, 'wt.swarm.json');
    const plain = writeManifest(
      dir,
      { workdir: 'w', setup: 'echo "# app" > NOTES.md', tasks: [scriptTask('p', WORKER, CHECK, { max_attempts: 1, guard: false })] },
      'plain.swarm.json',
    );
    const home = path.join(dir, 'home');
    assert.equal((await run(wt, home, ['--baseline'])).exitCode, 1);
    assert.equal((await run(plain, home, ['--baseline'])).exitCode, 1);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => row.verdict),
      ['FAIL', 'FAIL'],
      'a pass-token left by the baseline would have passed attempt 1',
    );
    assert.equal(sees(fs.readFileSync(String(rows[0]?.worker_log), 'utf8'), 'sees'), '.gitignore NOTES.md');
    assert.equal(sees(fs.readFileSync(String(rows[1]?.worker_log), 'utf8'), 'sees'), 'NOTES.md');
    assert.equal(sees(fs.readFileSync(String(rows[0]?.worker_log), 'utf8'), 'notes'), '# app|');
  });
});

describe('check writes: special files the check leaves', function () {
  this.timeout(120000);

  // A FIFO named .gitignore blocks git's open of it until something writes to it, which nothing does: `git clean`
  // (a new folder) and any walk of a tracked folder (update-index, ls-files) waited forever, and the run with them.
  it('a check that leaves FIFOs named .gitignore (in a new folder and in a tracked one) and a socket: the retry runs, the run ends, they are reported removed', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'src/a.txt': 'a\n' });
    const check =
      'mkdir -p new; mkfifo new/.gitignore src/.gitignore src/.gitattributes; python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\'sock\')" 2>/dev/null; exit 1';
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', 'echo work > out.txt', check, { max_attempts: 2, guard: false })] });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.attempt, row.verdict]),
      [
        [1, 'FAIL'],
        [2, 'FAIL'],
      ],
      r.all,
    );
    const line = /before attempt 2: what the previous check wrote was discarded: removed (.*)/.exec(r.all ?? '')?.[1] ?? '';
    for (const f of ['src/.gitignore', 'src/.gitattributes', 'new/.gitignore']) assert.ok(line.includes(f), `${f} in: ${line}\n${r.all}`);
  });
});
