import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// The critique loop (docs/workflows.md "Critique loop"): critics are custom engines whose binary is a
// bash script printing the JSON answer (the script engine cannot criticise); the workers are script-engine tasks.

interface Critic {
  name: string;
  model: string;
  /** The critic's bash body; $VERDICT_TASK_DIR is the proposal (read-only), $VERDICT_CRITIQUE_ROUND the round. */
  body: string;
}

/** A config file with one custom engine per critic, and the PATH that finds their binaries. */
function critics(dir: string, list: Critic[]): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const engines: Record<string, unknown> = {};
  for (const c of list) {
    fs.writeFileSync(path.join(bin, `critic-${c.name}`), `#!/bin/bash\n${c.body}\n`, { mode: 0o755 });
    engines[c.name] = { binary: `critic-${c.name}`, argv: ['{spec}'], install: 'a test fixture', output: 'none', model: c.model };
  }
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ engines }));
  return { config, env: { PATH: `${bin}:${process.env.PATH}` } };
}

/** A JSON answer as a bash `cat` of a quoted heredoc (no escaping to get wrong). */
const answer = (criticisms: unknown[]) => `cat <<'JSON'\n${JSON.stringify({ criticisms })}\nJSON`;

interface StateJson {
  tasks: {
    key: string;
    status: string;
    reason?: string;
    commit: string | null;
    branch: string | null;
    critique?: { report: string; rounds: number; revisions: number; verified: number; dropped: number; unresolved: number; stopped: string | null };
  }[];
}

async function run(repo: string, dir: string, tasks: Record<string, unknown>[], list: Critic[], o: { worktrees?: boolean; args?: string[] } = {}) {
  const { config, env } = critics(dir, list);
  const file = writeManifest(repo, { worktrees: o.worktrees ?? true, workdir: path.join(dir, 'work'), tasks });
  const home = path.join(dir, 'home');
  const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard', ...(o.args ?? [])], { env });
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
  return { code: r.exitCode, out: r.all, state, rows: readRows(home), runDir: path.join(home, 'runs', id as string) };
}

const SLUG_CHECK = 'out=$(echo Hello | bash slug.sh); test "$out" = hello || { echo "slug.sh printed $out"; exit 1; }';

describe('critique: criticism → revision → re-check, only criticisms that point at something checkable count', function () {
  this.timeout(180000);

  it('ends on "no change": checkable criticisms reach the revision, the others are dropped and counted; no retry is spent', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    // Attempt 1 writes slug.sh; the revision prints what it was handed and changes nothing.
    const spec = 'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "tr A-Z a-z" > slug.sh; else echo "handed:"; cat "$VERDICT_FAILURE_FILE"; fi';
    const { code, out, state, rows, runDir } = await run(
      repo,
      dir,
      [
        scriptTask('slug', spec, SLUG_CHECK, {
          max_attempts: 1,
          expect_files: ['slug.sh'],
          critique: { critics: [{ engine: 'crit', model: 'crit-2' }], rounds: 3 },
        }),
      ],
      [
        {
          name: 'crit',
          model: 'crit-1',
          body: answer([
            { file: 'slug.sh', line: 1, claim: 'spaces are not turned into hyphens' },
            { command: 'out=$(echo "a b" | bash slug.sh); test "$out" = a-b', claim: 'a b must become a-b' },
            { file: 'nope.sh', line: 3, claim: 'a file that is not there' },
            { file: 'slug.sh', line: 9, claim: 'a line that is not there' },
            { file: '../../etc/passwd', line: 1, claim: 'outside the proposal' },
            { command: 'true', claim: 'a command that passes points at nothing' },
          ]),
        },
      ],
    );
    assert.equal(code, 0, out);
    const task = state.tasks[0]!;
    assert.equal(task.status, 'PASS', out);
    assert.deepEqual(
      rows.map((r) => [r.step, r.attempt, r.worker_engine, r.model, r.verdict]),
      [
        ['work', 1, 'script', null, 'PASS'],
        ['critique', 1, 'crit', 'crit-2', 'FAIL'],
        ['work', 2, 'script', null, 'PASS'],
      ],
    );
    // max_attempts 1, yet a second attempt ran: the revision spent no retry.
    const c = rows[1]!.critique as { critic: number; round: number; verified: number; dropped: number; criticisms: { verified: boolean; evidence: string }[] };
    assert.deepEqual([c.critic, c.round, c.verified, c.dropped], [1, 1, 2, 4]);
    assert.deepEqual(
      c.criticisms.map((x) => x.verified),
      [true, true, false, false, false, false],
    );
    assert.match(c.criticisms[0]!.evidence, /^slug\.sh:1: tr A-Z a-z$/);
    assert.match(c.criticisms[1]!.evidence, /^exited 1/);
    assert.match(c.criticisms[2]!.evidence, /nope\.sh: the file is not in the sealed commit/);
    assert.match(c.criticisms[3]!.evidence, /slug\.sh has 1 line\(s\), not 9/);
    assert.match(c.criticisms[4]!.evidence, /outside the proposal/);
    assert.equal(c.criticisms[5]!.evidence, 'the command passed (exit 0) on the proposal: it points at nothing');
    // The state names the report and counts; the loop ended on "no change".
    assert.deepEqual(
      { ...task.critique, report: undefined, stopped: undefined },
      { report: undefined, rounds: 1, revisions: 1, verified: 2, dropped: 4, unresolved: 2, stopped: undefined },
    );
    assert.match(task.critique!.stopped ?? '', /^no change: revision 1 sealed the same tree/);
    assert.equal(task.critique!.report, path.join(runDir, 'tasks', 'slug', 'critique.md'));
    assert.equal(rows[2]!.critique_report, task.critique!.report, 'the final row names the report');
    const report = fs.readFileSync(task.critique!.report, 'utf8');
    assert.match(report, /Unresolved \(2\):\n- critic 1, slug\.sh:1: spaces are not turned into hyphens/);
    assert.match(report, /Dropped in all: 4\./);
    // The revision was handed the verified criticisms, and only those.
    const log = fs.readFileSync(path.join(runDir, 'tasks', 'slug', 'attempt-2', 'worker.log'), 'utf8');
    assert.match(log, /slug\.sh:1: spaces are not turned into hyphens/);
    assert.match(log, /a b must become a-b/);
    assert.doesNotMatch(log, /nope\.sh|points at nothing|not there/);
    // The critic's prompt names the rule; the branch holds the proposal the check passed.
    assert.match(fs.readFileSync(path.join(runDir, 'tasks', 'slug', 'attempt-1', 'critique-1.prompt.md'), 'utf8'), /it must exit non-zero on the proposal/);
    assert.equal(git(repo, 'show', `${task.branch}:slug.sh`), 'tr A-Z a-z');
  });

  it('a revision resolves the criticism: round 2 verifies nothing and the loop ends with nothing unresolved', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const spec =
      'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "tr A-Z a-z" > slug.sh; elif grep -q "a-b" "$VERDICT_FAILURE_FILE"; then echo "tr A-Z a-z | tr \' \' -" > slug.sh; fi';
    // The critic criticises only while the proposal keeps spaces (its command is the evidence either way).
    const cmd = 'out=$(echo "a b" | bash slug.sh); test "$out" = a-b';
    const { code, out, state, rows } = await run(
      repo,
      dir,
      [scriptTask('slug', spec, SLUG_CHECK, { critique: { critics: ['crit'] } })],
      [
        {
          name: 'crit',
          model: 'crit-1',
          body: `cd "$VERDICT_TASK_DIR" || exit 3\nif ${cmd}; then\n${answer([])}\nelse\n${answer([{ command: cmd, claim: 'a b must become a-b' }])}\nfi`,
        },
      ],
    );
    assert.equal(code, 0, out);
    const task = state.tasks[0]!;
    assert.deepEqual(
      rows.map((r) => [r.step, r.attempt, r.verdict, (r.critique as { verified?: number } | undefined)?.verified ?? null]),
      [
        ['work', 1, 'PASS', null],
        ['critique', 1, 'PASS', 1],
        ['work', 2, 'PASS', null],
        ['critique', 2, 'PASS', 0],
      ],
    );
    assert.equal(task.critique?.stopped, 'no verified criticism remains');
    assert.equal(task.critique?.unresolved, 0);
    assert.equal(git(repo, 'show', `${task.branch}:slug.sh`), "tr A-Z a-z | tr ' ' -");
    assert.equal(task.commit, rows[2]!.commit, 'the revision is delivered');
  });

  it('a command that fails on anything (`false`, `exit 1`, `test -f /nonexistent`, `grep -q x /dev/null`) is dropped and counted, not verified; the loop ends on "nothing verified"', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const spec = 'echo "tr A-Z a-z" > slug.sh';
    const { code, out, state, rows, runDir } = await run(
      repo,
      dir,
      [scriptTask('slug', spec, SLUG_CHECK, { critique: { critics: ['crit'], rounds: 3 } })],
      [
        {
          name: 'crit',
          model: 'crit-1',
          body: answer([
            { command: 'false', claim: 'fails on anything' },
            { command: 'exit 1', claim: 'fails on anything' },
            { command: 'test -f /nonexistent', claim: 'fails on anything' },
            { command: 'grep -q x /dev/null', claim: 'fails on anything' },
          ]),
        },
      ],
    );
    assert.equal(code, 0, out);
    const task = state.tasks[0]!;
    // No revision: one proposal, one critique row (FAIL: its criticisms were dropped).
    assert.deepEqual(
      rows.map((r) => [r.step, r.attempt, r.verdict]),
      [
        ['work', 1, 'PASS'],
        ['critique', 1, 'FAIL'],
      ],
    );
    const c = rows[1]!.critique as { verified: number; dropped: number; criticisms: { verified: boolean; evidence: string }[] };
    assert.deepEqual([c.verified, c.dropped], [0, 4]);
    assert.match(c.criticisms[0]!.evidence, /can never exit 0/);
    assert.match(c.criticisms[1]!.evidence, /can never exit 0/);
    assert.match(c.criticisms[2]!.evidence, /fails on an empty tree too \(exited 1\) and names no file of the proposal/);
    assert.match(c.criticisms[3]!.evidence, /fails on an empty tree too \(exited 1\) and names no file of the proposal/);
    assert.equal(task.critique?.stopped, 'no verified criticism remains');
    assert.deepEqual([task.critique?.verified, task.critique?.dropped, task.critique?.unresolved, task.critique?.revisions], [0, 4, 0, 0]);
    // The statically dropped ones never ran; the others ran on the proposal and on the empty control.
    const records = path.join(runDir, 'tasks', 'slug', 'attempt-1');
    assert.ok(!fs.existsSync(path.join(records, 'critique-1.command-1.log')), '`false` was not run');
    assert.ok(fs.existsSync(path.join(records, 'critique-1.command-3.control.log')), 'test -f /nonexistent ran on the control');
    assert.match(fs.readFileSync(task.critique!.report, 'utf8'), /Unresolved: none\.[\s\S]*Dropped in all: 4\./);
  });

  it('a command about the proposal counts: one naming its file, one passing on the empty control; each drives a revision', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    // Attempt 1 leaves a debugging line and keeps spaces; the revision fixes what it was handed.
    const spec = 'if [ "$VERDICT_ATTEMPT" = 1 ]; then printf "echo debugging >&2\\ntr A-Z a-z\\n" > slug.sh; else echo "tr A-Z a-z | tr \' \' -" > slug.sh; fi';
    const todo = '! grep -rq debugging .';
    const spaces = 'out=$(echo "a b" | bash slug.sh); test "$out" = a-b';
    const { code, out, state, rows } = await run(
      repo,
      dir,
      [scriptTask('slug', spec, SLUG_CHECK, { critique: { critics: ['crit'], rounds: 2 } })],
      [
        {
          name: 'crit',
          model: 'crit-1',
          body: `cd "$VERDICT_TASK_DIR" || exit 3\nif [ "$VERDICT_CRITIQUE_ROUND" = 1 ]; then\n${answer([
            { command: todo, claim: 'a debugging line is left' },
            { command: spaces, claim: 'a b must become a-b' },
          ])}\nelse\n${answer([])}\nfi`,
        },
      ],
    );
    assert.equal(code, 0, out);
    assert.deepEqual(
      rows.map((r) => [r.step, r.attempt, r.verdict]),
      [
        ['work', 1, 'PASS'],
        ['critique', 1, 'PASS'],
        ['work', 2, 'PASS'],
        ['critique', 2, 'PASS'],
      ],
    );
    const c = rows[1]!.critique as { verified: number; criticisms: { verified: boolean; evidence: string }[] };
    assert.equal(c.verified, 2);
    assert.match(c.criticisms[0]!.evidence, /^exited 1 \(it passes on an empty tree\)/);
    assert.match(c.criticisms[1]!.evidence, /^exited 1 \(it reads slug\.sh, a file of the proposal\)/);
    assert.equal(state.tasks[0]!.critique?.stopped, 'no verified criticism remains');
    assert.equal(git(repo, 'show', `${state.tasks[0]!.branch}:slug.sh`), "tr A-Z a-z | tr ' ' -");
  });

  it('stops at the round limit with what is still verified unresolved', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    // Every revision changes the file, and the critic always finds line 1.
    const spec = 'echo "tr A-Z a-z # $VERDICT_ATTEMPT" > slug.sh';
    const { code, out, state, rows } = await run(
      repo,
      dir,
      [scriptTask('slug', spec, SLUG_CHECK, { critique: { critics: ['crit'], rounds: 2 } })],
      [{ name: 'crit', model: 'crit-1', body: answer([{ file: 'slug.sh', line: 1, claim: 'still not right' }]) }],
    );
    assert.equal(code, 0, out);
    assert.deepEqual(
      rows.map((r) => [r.step, r.attempt]),
      [
        ['work', 1],
        ['critique', 1],
        ['work', 2],
        ['critique', 2],
        ['work', 3],
        ['critique', 3],
      ],
    );
    assert.equal(state.tasks[0]!.critique?.stopped, 'round limit: 2 revision(s) done');
    assert.equal(state.tasks[0]!.critique?.unresolved, 1);
  });

  it("hostile: a revision that makes the critic's command pass by rewriting the test it runs does not resolve it; the check's files decide", async () => {
    const dir = tempDir();
    // tests/edge.sh is a conventional test file, so it is protected (read-only to the worker, restored, guarded).
    const repo = makeRepo(path.join(dir, 'repo'), {
      'tests/edge.sh': 'out=$(echo "a b" | bash slug.sh); test "$out" = a-b\n',
      'tests/check.sh': SLUG_CHECK + '\n',
    });
    const spec = 'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "tr A-Z a-z" > slug.sh; else echo "exit 0" > tests/edge.sh; echo "# revised" >> slug.sh; fi';
    const { code, out, state, rows } = await run(
      repo,
      dir,
      [scriptTask('slug', spec, 'bash tests/check.sh', { max_attempts: 1, critique: { critics: ['crit'], rounds: 1 } })],
      [{ name: 'crit', model: 'crit-1', body: answer([{ command: 'bash tests/edge.sh', claim: 'a b must become a-b' }]) }],
    );
    const task = state.tasks[0]!;
    // The edit to the protected test never lands: the branch keeps the original, and the criticism is not resolved.
    assert.equal(git(repo, 'show', `${task.branch}:tests/edge.sh`), 'out=$(echo "a b" | bash slug.sh); test "$out" = a-b');
    const critiques = rows.filter((r) => r.step === 'critique');
    for (const r of critiques)
      assert.equal(
        (r.critique as { verified: number }).verified,
        1,
        `round ${(r.critique as { round: number }).round}: the command still fails on the revision`,
      );
    if (task.status === 'PASS') {
      // Sandboxed: the write failed (read-only), the rest of the revision passed the check; the point stays open.
      assert.equal(code, 0, out);
      assert.equal(task.critique?.unresolved, 1, out);
    } else {
      // Unsandboxed: the guard saw the protected file change and FAILed the revision.
      assert.equal(task.status, 'FAIL', out);
      assert.match(String(rows.at(-1)?.notes), /tests\/edge\.sh/);
    }
  });

  it('SIGKILL of the orchestrator between rounds: `verdict resume` goes on with the next round (no round repeated, the time limit from the real start, at most `rounds` revisions); no worker can write the kept loop', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    // Attempt 1 keeps spaces; attempt 2 (the revision) tries to reset the kept loop, says it started and hangs until the
    // kill; attempt 3 (after resume) fixes slug.sh only if it is handed the criticism, as a revision is.
    const loopFile = `${home}/runs/$VERDICT_RUN_ID/tasks/slug/critique-loop.json`;
    const spec = [
      'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "tr A-Z a-z" > slug.sh',
      `elif [ "$VERDICT_ATTEMPT" = 2 ]; then echo '{"version":1}' > "${loopFile}"; rm -f "${loopFile}"; touch started; sleep 300`,
      'else rm -f started; if grep -q a-b "$VERDICT_FAILURE_FILE"; then echo "tr A-Z a-z | tr \' \' -" > slug.sh; fi; fi',
    ].join('\n');
    const cmd = 'out=$(echo "a b" | bash slug.sh); test "$out" = a-b';
    // The critic always points at line 1 (verified while slug.sh exists), and at the spaces while they are kept.
    const body = `cd "$VERDICT_TASK_DIR" || exit 3\nif ${cmd}; then\n${answer([{ file: 'slug.sh', line: 1, claim: 'still not right' }])}\nelse\n${answer([
      { file: 'slug.sh', line: 1, claim: 'still not right' },
      { command: cmd, claim: 'a b must become a-b' },
    ])}\nfi`;
    const { config, env } = critics(dir, [{ name: 'crit', model: 'crit-1', body }]);
    const manifest = writeManifest(repo, {
      worktrees: true,
      tasks: [scriptTask('slug', spec, SLUG_CHECK, { critique: { critics: ['crit'], rounds: 1, time_limit_s: 3600 } })],
    });
    const child = execa('node', [CLI, 'run', manifest, '--home', home, '--config', config, '--no-dashboard'], {
      env,
      reject: false,
      all: true,
      stdin: 'ignore',
    });
    let runId = '';
    for (let i = 0; i < 1200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      runId = fs.existsSync(path.join(home, 'runs')) ? (fs.readdirSync(path.join(home, 'runs'))[0] ?? '') : '';
      if (runId && fs.existsSync(path.join(home, 'worktrees', runId, 'slug', 'started'))) break;
    }
    assert.ok(runId && fs.existsSync(path.join(home, 'worktrees', runId, 'slug', 'started')), 'the revision started');
    child.kill('SIGKILL');
    const first = await child;
    const kept = path.join(home, 'runs', runId, 'tasks', 'slug', 'critique-loop.json');
    // The revision's worker could not touch the kept loop (VERDICT_HOME is hidden from every step).
    const before = JSON.parse(fs.readFileSync(kept, 'utf8')) as { startedAt: number; revisions: number; pending: boolean; rounds: unknown[] };
    assert.deepEqual([before.revisions, before.pending, before.rounds.length], [1, true, 1], first.all);
    assert.deepEqual(
      readRows(home).map((r) => [r.step, r.attempt, r.verdict]),
      [
        ['work', 1, 'PASS'],
        ['critique', 1, 'PASS'],
      ],
    );

    const r = await cli(['resume', runId, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.all, /critique goes on: round 2 next, 1 of at most 1 revision\(s\) done \(revision 1 asked again, handed 2 point\(s\)\)/);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => [x.step, x.attempt, x.verdict]),
      [
        ['work', 1, 'PASS'],
        ['critique', 1, 'PASS'],
        ['work', 2, 'INTERRUPTED'],
        ['work', 3, 'PASS'],
        ['critique', 3, 'PASS'],
      ],
    );
    // Each round once: round 2 criticised the resumed revision; it is the last (1 revision at most), its point unresolved.
    assert.deepEqual(
      rows.filter((x) => x.step === 'critique').map((x) => (x.critique as { round: number }).round),
      [1, 2],
    );
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as StateJson;
    const task = state.tasks[0]!;
    assert.equal(task.status, 'PASS');
    assert.deepEqual(
      { ...task.critique, report: undefined },
      { report: undefined, rounds: 2, revisions: 1, verified: 3, dropped: 0, unresolved: 1, stopped: 'round limit: 1 revision(s) done' },
    );
    // The revision was the one asked before the kill (handed the points), and the time limit counts from round 1.
    assert.equal(git(repo, 'show', `${task.branch}:slug.sh`), "tr A-Z a-z | tr ' ' -");
    const after = JSON.parse(fs.readFileSync(kept, 'utf8')) as { startedAt: number };
    assert.equal(after.startedAt, before.startedAt);
    const report = fs.readFileSync(task.critique!.report, 'utf8');
    assert.deepEqual(
      [...report.matchAll(/^## Round (\d+) \(attempt (\d+)/gm)].map((m) => [m[1], m[2]]),
      [
        ['1', '1'],
        ['2', '3'],
      ],
    );
  });

  for (const sandboxed of [true, false]) {
    it(`hostile critic, ${sandboxed ? 'sandboxed' : 'unsandboxed (a copy)'}: a criticism's command cannot change the proposal (plain mode)`, async function () {
      if (sandboxed) await requireSandbox(this);
      const dir = tempDir();
      const repo = makeRepo(path.join(dir, 'repo'));
      const spec = 'echo "tr A-Z a-z" > slug.sh';
      // The command tries to plant a file and to rewrite slug.sh, then fails reading slug.sh (so it counts as verified).
      const planted = 'echo planted > planted.txt; echo "exit 0" > slug.sh; grep -q hyphen slug.sh';
      const { code, out, state, rows } = await run(
        repo,
        dir,
        [scriptTask('slug', spec, SLUG_CHECK, { critique: { critics: ['crit'], rounds: 1 } })],
        [{ name: 'crit', model: 'crit-1', body: answer([{ command: planted, claim: 'plants a file' }]) }],
        { worktrees: false, args: sandboxed ? [] : ['--no-sandbox'] },
      );
      assert.equal(code, 0, out);
      const taskDir = path.join(dir, 'work', 'slug');
      assert.ok(!fs.existsSync(path.join(taskDir, 'planted.txt')), 'nothing planted in the task dir');
      assert.equal(fs.readFileSync(path.join(taskDir, 'slug.sh'), 'utf8'), 'tr A-Z a-z\n');
      assert.equal((rows[1]!.critique as { verified: number }).verified, 1);
      assert.equal(state.tasks[0]!.critique?.stopped, 'no change: revision 1 sealed the same tree as the proposal it revised');
    });
  }
});
