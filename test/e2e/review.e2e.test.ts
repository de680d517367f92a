import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { followRun, summaryFromRecords } from '../../extension/core/run/run-launch';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, findChromium, startHudProcess } from '../helpers/hud';

// The review step: reviewer engines read the work after its check passed and answer in their final
// message. The reviewers here are custom engines whose binary is a bash script (`output: none`: the final message is
// the last output line); the workers are script-engine tasks.

interface Reviewer {
  name: string;
  model: string;
  /** The reviewer's bash body; $1 is the prompt, $VERDICT_REVIEW_MATERIAL the diff or files, $VERDICT_ATTEMPT the attempt. */
  body: string;
}

/** A config file with one custom engine per reviewer, and the PATH that finds their binaries. */
function reviewers(dir: string, list: Reviewer[]): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const engines: Record<string, unknown> = {};
  for (const r of list) {
    fs.writeFileSync(path.join(bin, `review-${r.name}`), `#!/bin/bash\n${r.body}\n`, { mode: 0o755 });
    engines[r.name] = { binary: `review-${r.name}`, argv: ['{spec}'], install: 'a test fixture', output: 'none', model: r.model };
  }
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ engines }));
  return { config, env: { PATH: `${bin}:${process.env.PATH}` } };
}

const APPROVE = `echo '{"verdict": "approve", "concerns": []}'`;

/** Which columns say who a row credits and what it says, in log order. */
function credits(rows: Record<string, unknown>[]): unknown[][] {
  return rows.map((r) => [r.step, r.attempt, r.worker_engine, r.model, r.verdict, (r.review as { verdict?: unknown } | undefined)?.verdict ?? null]);
}

describe('review: reviewers approve, ask for changes or reject the work after its check', function () {
  this.timeout(180000);
  /** VERDICT_HOME of the first test's run (changes and reject, then approval), for the dashboard test. */
  let reviewedHome = '';

  it('changes and reject, then approval on the retry: the concerns reach the worker, rows credited to worker and reviewers', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const { config, env } = reviewers(dir, [
      // Reads the diff: asks for changes while it subtracts.
      {
        name: 'differ',
        model: 'differ-1',
        body: `if grep -q 'a - b' "$VERDICT_REVIEW_MATERIAL"; then echo 'looking at the diff'; echo '{"verdict":"changes","concerns":["add.py:1 subtracts; add() must add"]}'; else ${APPROVE}; fi`,
      },
      // Rejects the first attempt whatever it is, approves the second.
      {
        name: 'strict',
        model: 'strict-1',
        body: `if [ "$VERDICT_ATTEMPT" = 1 ]; then echo '{"verdict":"reject","concerns":["no tests were added"]}'; else ${APPROVE}; fi`,
      },
    ]);
    // The retry fixes what the failure file names (proof the concerns were injected).
    const spec = [
      'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "def add(a, b): return a - b" > add.py',
      'else grep -q "add() must add" "$VERDICT_FAILURE_FILE" && grep -q "no tests were added" "$VERDICT_FAILURE_FILE" && { echo "def add(a, b): return a + b" > add.py; echo "assert add(1, 2) == 3" > test_add.py; }; fi',
    ].join('\n');
    const task = scriptTask('add', spec, 'test -s add.py || { echo "add.py missing"; exit 1; }', {
      review: { engines: [{ engine: 'differ', model: 'differ-2' }, 'strict'], require: 'all' },
    });
    const file = writeManifest(repo, { worktrees: true, tasks: [task] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    reviewedHome = home;
    const rows = readRows(home);
    assert.deepEqual(credits(rows), [
      ['work', 1, 'script', null, 'FAIL', null],
      ['review', 1, 'differ', 'differ-2', 'FAIL', 'changes'],
      ['review', 1, 'strict', 'strict-1', 'FAIL', 'reject'],
      ['work', 2, 'script', null, 'PASS', null],
      ['review', 2, 'differ', 'differ-2', 'PASS', 'approve'],
      ['review', 2, 'strict', 'strict-1', 'PASS', 'approve'],
    ]);
    const [w1, d1, s1, w2, d2] = rows as Record<string, unknown>[];
    assert.match(
      String(w1?.notes),
      /review: 0 of 2 reviewer\(s\) approved, all needed\. differ\/differ-2 asked for changes: \(1\) add\.py:1 subtracts; add\(\) must add; strict\/strict-1 rejected the work: \(1\) no tests were added/,
    );
    assert.equal(w1?.check_exit_code, 0, 'the check passed; the review failed the attempt');
    assert.equal(w1?.commit, null);
    assert.deepEqual(d1?.review, { reviewer: 1, verdict: 'changes', concerns: ['add.py:1 subtracts; add() must add'] });
    assert.deepEqual((s1?.review as { reviewer: number }).reviewer, 2);
    // A review row names what it reviewed: the sealed commit the work row's check judged.
    assert.equal(d1?.sealed, w1?.sealed);
    assert.equal(d2?.sealed, w2?.sealed);
    assert.equal(w2?.commit, w2?.sealed, 'the approved commit is delivered');
    const branch = String(w2?.branch);
    assert.equal(git(repo, 'rev-parse', branch), w2?.commit);
    assert.equal(git(repo, 'show', `${branch}:add.py`), 'def add(a, b): return a + b');
    // The reviewer's prompt holds the diff; the worker's failure file the concerns.
    const runDir = path.join(home, 'runs', String(w1?.run_id), 'tasks', 'add');
    assert.match(fs.readFileSync(path.join(runDir, 'attempt-2', 'review-1.prompt.md'), 'utf8'), /^\+def add\(a, b\): return a \+ b$/m);
    assert.equal(d1?.prompt_path, path.join(runDir, 'attempt-1', 'review-1.prompt.md'));
    const failure = fs.readFileSync(path.join(runDir, 'attempt-2', 'failure.md'), 'utf8');
    assert.match(failure, /The check passed, but the reviewers did not approve the work/);
    assert.match(failure, /strict\/strict-1 rejected the work as a whole: rethink the approach:\n- no tests were added/);
    const receipt = JSON.parse(fs.readFileSync(path.join(runDir, 'attempt-1', 'receipt.json'), 'utf8')) as { steps: { step: string }[]; reviews: unknown[] };
    assert.deepEqual(
      receipt.steps.map((s) => s.step),
      ['prepare', 'work', 'seal', 'guard', 'check', 'review'],
    );
    assert.equal(receipt.reviews.length, 2);
    // The scoreboard: two work attempts (the script engine names no model: quarantined), the reviews apart.
    const models = await cli(['models', '--home', home, '--json']);
    assert.equal(models.exitCode, 0, models.all);
    const { view, source } = JSON.parse(models.stdout) as {
      view: { reviews: Record<string, unknown>[]; totals: { quarantined_attempts: number } };
      source: { rows: number };
    };
    assert.equal(source.rows, 2);
    assert.equal(view.totals.quarantined_attempts, 2);
    assert.deepEqual(
      view.reviews.map((x) => [x.model, x.reviews, x.approve, x.changes, x.reject, x.errors, x.engines]),
      [
        ['differ-2', 2, 1, 1, 0, 0, ['differ']],
        ['strict-1', 2, 1, 0, 1, 0, ['strict']],
      ],
    );
    const text = await cli(['models', '--home', home]);
    assert.match(
      text.stdout,
      /reviews \(rows with step review, per reviewing model; not attempts: never in the rates above\):\n\s+model\s+reviews\s+approve\s+changes\s+reject\s+error\s+engines\s+last seen\n\s+differ-2\s+2\s+1\s+1\s+0\s+0\s+differ/,
    );
    assert.match(text.stdout, /^2 attempt\(s\) from /m);
    // The editor's summary of a run it did not start (from state.json and the rows) counts the work rows only.
    const summary = summaryFromRecords(home, await followRun(path.join(home, 'runs', String(w1?.run_id), 'state.json'), undefined, { pollMs: 50 }));
    assert.deepEqual(
      summary.tasks.map((t) => [t.key, t.verdict, t.attempts, t.durationMs]),
      [['add', 'PASS', 2, Number(w1?.duration_ms) + Number(w2?.duration_ms)]],
    );
  });

  it("the dashboard's scoreboard shows each reviewing model's verdicts apart (verdict hud in Chromium)", async function () {
    if (!findChromium() || !reviewedHome) this.skip();
    const hud = await startHudProcess(reviewedHome);
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    try {
      const page = await browser.newPage();
      await page.goto(hud.url);
      await page.locator('vscode-button[data-view="scoreboard"]').click();
      const table = page.getByTestId('reviews');
      await table.waitFor({ timeout: 30000 });
      const lines = (await table.locator('tbody tr').allInnerTexts()).map((t) => t.split('\t').map((c) => c.trim()));
      assert.deepEqual(lines, [
        ['differ-2', '2', '1', '1', '0', '0', 'differ'],
        ['strict-1', '2', '1', '0', '1', '0', 'strict'],
      ]);
    } finally {
      await browser.close();
      await hud.stop();
    }
  });

  it('a reviewer whose answer is not JSON is its own ERROR row: with require all the attempt is ERROR (not FAIL, not retried); with require any another approval passes', async () => {
    const dir = tempDir();
    const { config, env } = reviewers(dir, [
      { name: 'chatty', model: 'chatty-1', body: 'echo "LGTM, ship it"' },
      { name: 'wrongshape', model: 'ws-1', body: `echo '{"verdict":"changes","concerns":[]}'` },
      { name: 'good', model: 'good-1', body: APPROVE },
    ]);
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask('all', 'echo ok > ok.txt', 'test -s ok.txt', { max_attempts: 3, review: { engines: ['chatty', 'good'] } }),
        scriptTask('any', 'echo ok > ok.txt', 'test -s ok.txt', { review: { engines: ['wrongshape', 'good'], require: 'any' } }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    const of = (key: string) => rows.filter((row) => row.task_key === key);
    assert.deepEqual(credits(of('all')), [
      ['work', 1, 'script', null, 'ERROR', null],
      ['review', 1, 'chatty', 'chatty-1', 'ERROR', null],
      ['review', 1, 'good', 'good-1', 'PASS', 'approve'],
    ]);
    assert.match(
      String(of('all')[0]?.notes),
      /^review undecided: 1 of 2 reviewer\(s\) approved, all needed; chatty\/chatty-1 gave no valid answer \(the reviewer's final message is not JSON: LGTM, ship it\)/,
    );
    assert.match(String(of('all')[1]?.notes), /not JSON: LGTM, ship it/);
    assert.deepEqual(credits(of('any')), [
      ['work', 1, 'script', null, 'PASS', null],
      ['review', 1, 'wrongshape', 'ws-1', 'ERROR', null],
      ['review', 1, 'good', 'good-1', 'PASS', 'approve'],
    ]);
    assert.match(String(of('any')[1]?.notes), /does not match schemas\/review-answer\.schema\.json: \/concerns must NOT have fewer than 1 items/);
    // Plain mode: the reviewers were given the files.
    const prompt = fs.readFileSync(String(of('any')[2]?.prompt_path), 'utf8');
    assert.match(prompt, /the files of the task dir/);
    assert.match(prompt, /^=== ok\.txt\nok$/m);
  });

  it('sandboxed: a hostile reviewer cannot change the sealed tree, the worktree or VERDICT_HOME; the PASS commit is what the check judged', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const hostile = [
      'cd "$VERDICT_TASK_DIR"',
      'echo "def add(a, b): return 42" > add.py && echo "WROTE add.py"',
      'echo x > planted.txt && echo "WROTE planted.txt"',
      'git add -A && git commit -qm hijack && echo "COMMITTED"',
      `echo junk >> ${home}/runs.jsonl 2>/dev/null && echo "WROTE runs.jsonl"`,
      'ls "$VERDICT_TASK_DIR" >/dev/null && echo "CAN READ the task dir"',
      APPROVE,
    ].join('\n');
    const { config, env } = reviewers(dir, [{ name: 'hostile', model: 'h-1', body: hostile }]);
    const file = writeManifest(repo, {
      worktrees: true,
      tasks: [scriptTask('add', 'echo "def add(a, b): return a + b" > add.py', 'grep -q "a + b" add.py', { review: { engines: ['hostile'] } })],
    });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(credits(rows), [
      ['work', 1, 'script', null, 'PASS', null],
      ['review', 1, 'hostile', 'h-1', 'PASS', 'approve'],
    ]);
    const log = fs.readFileSync(String(rows[1]?.worker_log), 'utf8');
    assert.match(log, /CAN READ the task dir/);
    assert.match(log, /add\.py: Read-only file system/);
    assert.doesNotMatch(log, /WROTE add\.py|WROTE planted\.txt|COMMITTED/, log);
    // VERDICT_HOME is an empty tmpfs inside the sandbox: a write there lands in it and is gone with the sandbox.
    assert.doesNotMatch(fs.readFileSync(path.join(home, 'runs.jsonl'), 'utf8'), /junk/);
    const work = rows[0] as Record<string, unknown>;
    assert.equal(work.commit, work.sealed);
    assert.equal(git(repo, 'rev-parse', String(work.branch)), work.commit);
    assert.equal(git(repo, 'show', `${String(work.branch)}:add.py`), 'def add(a, b): return a + b');
    const taskDir = git(repo, 'worktree', 'list', '--porcelain')
      .split('\n')
      .find((l) => l.startsWith('worktree ') && l.endsWith('/add'))
      ?.slice('worktree '.length) as string;
    assert.equal(fs.readFileSync(path.join(taskDir, 'add.py'), 'utf8'), 'def add(a, b): return a + b\n');
    assert.equal(fs.existsSync(path.join(taskDir, 'planted.txt')), false);
  });

  it('unsandboxed: a reviewer that changes the task dir makes the attempt ERROR, naming it; nothing is delivered', async () => {
    const dir = tempDir();
    const { config, env } = reviewers(dir, [{ name: 'hostile', model: 'h-1', body: `echo "return 42" > "$VERDICT_TASK_DIR/add.py"\n${APPROVE}` }]);
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [scriptTask('add', 'echo "a + b" > add.py', 'grep -q "a + b" add.py', { review: { engines: ['hostile'] } })],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    assert.deepEqual(credits(rows), [
      ['work', 1, 'script', null, 'ERROR', null],
      ['review', 1, 'hostile', 'h-1', 'ERROR', null],
    ]);
    assert.match(
      String(rows[0]?.notes),
      /reviewer 1 \(hostile\/h-1\) changed the task dir during its review; what the check judged is no longer what is there/,
    );
    assert.equal(rows[1]?.notes, 'the reviewer changed the task dir during its review');
  });

  it("a task stopped during its review ends CANCELLED: the reviewer's processes are gone, its review row CANCELLED saying why, nothing delivered", async () => {
    const dir = tempDir();
    const { config, env } = reviewers(dir, [{ name: 'slow', model: 's-1', body: `echo reviewing; sleep 3017\n${APPROVE}` }]);
    const repo = makeRepo(path.join(dir, 'repo'));
    const file = writeManifest(repo, {
      worktrees: true,
      tasks: [scriptTask('add', 'echo ok > add.txt', 'test -s add.txt', { review: { engines: ['slow'] } })],
    });
    const home = path.join(dir, 'home');
    const child = execa('node', [CLI, 'run', file, '--home', home, '--config', config, '--no-dashboard'], {
      env: { ...process.env, ...env },
      reject: false,
      all: true,
      stdin: 'ignore',
    });
    const reviewing = (): string | null => {
      const runs = fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : [];
      const runId = runs[0];
      if (!runId) return null;
      try {
        const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as {
          tasks: { attempts: { step?: string | null }[] }[];
        };
        const log = path.join(home, 'runs', runId, 'tasks', 'add', 'attempt-1', 'review-1.log');
        return state.tasks[0]?.attempts[0]?.step === 'review' && fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('reviewing') ? runId : null;
      } catch {
        return null; // the state file is being replaced
      }
    };
    let runId: string | null = null;
    for (let i = 0; i < 1200 && !runId; i++) {
      await new Promise((r) => setTimeout(r, 50));
      runId = reviewing();
    }
    assert.ok(runId, 'the reviewer started');
    const stop = await cli(['stop', runId, 'add', '--home', home], { env });
    assert.equal(stop.exitCode, 0, stop.all);
    const r = await child;
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    // The stopped reviewer keeps its row (what it spent until then counts in the eval log: here its engine reports none).
    assert.deepEqual(credits(rows), [
      ['work', 1, 'script', null, 'CANCELLED', null],
      ['review', 1, 'slow', 's-1', 'CANCELLED', null],
    ]);
    assert.match(String(rows[1]?.notes), /^stopped before it answered \(stopped by /);
    assert.equal(rows[0]?.commit, null);
    const sleepers = fs
      .readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('sleep\u00003017');
        } catch {
          return false;
        }
      });
    assert.deepEqual(sleepers, [], "the reviewer's sleep is gone with its sandbox");
    const branch = `verdict/${runId}/add`;
    assert.equal(git(repo, 'rev-parse', branch), git(repo, 'rev-parse', 'main'), 'the branch did not move');
  });

  it('lint and preflight: an unknown reviewer engine is an error with its position; a missing reviewer binary stops the run', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('t', 'true', 'true', { review: { engines: ['script', 'nosuch'] } })] });
    const lint = await cli(['lint', file]);
    assert.equal(lint.exitCode, 1, lint.all);
    assert.match(lint.all, /test\.swarm\.json:\d+:\d+: error \[unknown-engine\] \(t\) tasks\[0\]\.review\.engines\[1\]: unknown reviewer engine "nosuch"/);
    const { config } = reviewers(dir, [{ name: 'absent', model: 'a-1', body: APPROVE }]);
    const file2 = writeManifest(dir, { workdir: 'w', review: { engines: ['absent'] }, tasks: [scriptTask('t', 'true', 'true')] }, 'run-level.swarm.json');
    // --force: the check `true` is a lint error; the preflight is what is tested.
    const run = await cli(['run', file2, '--home', path.join(dir, 'home'), '--config', config, '--no-dashboard', '--force']);
    assert.equal(run.exitCode, 2, run.all);
    assert.match(run.all, /engine "absent" needs the `review-absent` command, which is not on PATH/);
  });
});
