import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, type RealRun, type RealTaskOptions } from '../helpers/real-engines';
import { assertRetried, assertReviewedTwice, doctorOf, retryScenario, reviewScenario, runScenarios } from '../helpers/real-suite';

// The real codex CLI run by the built `verdict run` inside Verdict's sandbox against the scripted model server's
// Responses API, in the scenarios the Claude Code and Gemini CLI suites share (test/helpers/real-suite.ts), all at once;
// its worker PASS with exact usage, 429 requeue, reviewer and best-of-2 are in test/e2e/real-engines.e2e.test.ts, its
// quota wait in test/e2e/hostile-waits.e2e.test.ts.

const MODEL = 'stub-model';

describe(`real codex CLI against the scripted model server, the shared scenarios (${ISOLATED ? 'loopback-only network namespace' : 'not isolated'})`, function () {
  this.timeout(600000);
  let run: (name: string) => RealRun;
  // The user's own codex config and instructions as they were before the run ($CODEX_HOME, test/helpers/real-engines.ts).
  let seeded: { config: string; agents: string } | null = null;

  before(async function () {
    this.timeout(600000);
    const base: RealTaskOptions = { engine: 'codex', model: MODEL, binDirs: [await ensureCli('codex')], mode: 'worktree' };
    const scenarios: Record<string, RealTaskOptions> = {
      retry: retryScenario(base),
      review: reviewScenario(base),
      badKey: { ...base, mode: 'plain', server: { requireKey: 'sk-the-real-one' } },
      // The variable the provider's env_key names, unset: codex fails before any model call, in its own words.
      noKey: { ...base, mode: 'plain', env: { VERDICT_TEST_MODEL_KEY: null } },
      // A command writing outside the task dir, which an interactive codex would ask to run outside its sandbox;
      // `codex exec` asks nobody, and the sandbox (codex's inside Verdict's, as root Verdict's alone) keeps the write
      // from reaching the folder.
      permission: {
        ...base,
        mode: 'plain',
        server: { askTool: { name: 'exec_command', input: { cmd: "printf 'outside\\n' > ../outside.txt" } } },
        seedHome: (home) => {
          const codexHome = path.join(home, '..', 'codex-home');
          fs.writeFileSync(path.join(codexHome, 'AGENTS.md'), '# My instructions\nAlways answer in English.\n');
          seeded = { config: fs.readFileSync(path.join(codexHome, 'config.toml'), 'utf8'), agents: fs.readFileSync(path.join(codexHome, 'AGENTS.md'), 'utf8') };
        },
      },
    };
    run = await runScenarios('codex', scenarios);
  });

  it('a first attempt that FAILs the check is retried with the check output in the prompt; the retry PASSes', () => {
    assertRetried(run('retry'), 'responses');
  });

  it('a codex reviewer answering changes fails the attempt; the retry addresses it and the reviewer approves', () => {
    assertReviewedTwice(run('review'), 'codex');
  });

  it('a key the API refuses (401): the attempt FAILs as an auth error; verdict doctor in that home says codex is not logged in and names the fix', async () => {
    const r = run('badKey');
    assert.equal(r.result.exitCode, 1, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [[1, 'FAIL']],
      explainRun(r),
    );
    assert.match(String(r.rows[0]?.notes), /the worker exited 1 \(auth\)/, explainRun(r));
    assert.equal(r.server.usageSent.calls, 0);
    const { entry: codex, json, text } = await doctorOf('codex', r);
    assert.deepEqual([codex?.login, codex?.version], ['no', 'codex-cli 0.171.0'], json);
    assert.match(String(codex?.fix), /^codex login\b/);
    assert.deepEqual(codex?.tested, { status: 'tested', versions: ['0.171.0'] });
    assert.match(text, /0\.171\.0[^\n]*, a tested version/, text);
  });

  it("no key (the variable its provider's env_key names is unset): the attempt FAILs as an auth error, in codex's own words", () => {
    const r = run('noKey');
    assert.equal(r.result.exitCode, 1, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [[1, 'FAIL']],
      explainRun(r),
    );
    assert.match(String(r.rows[0]?.notes), /the worker exited 1 \(auth\)/, explainRun(r));
    assert.match(
      fs.readFileSync(String(r.rows[0]?.worker_log), 'utf8'),
      /"turn\.failed","error":\{"message":"Missing environment variable: `VERDICT_TEST_MODEL_KEY`\."/,
    );
    assert.equal(r.server.usageSent.calls, 0);
  });

  it("a command writing outside the task dir runs without asking and writes nothing there: the run never waits for input and PASSes; the user's config.toml and AGENTS.md are byte-identical, the session went to $CODEX_HOME/sessions", () => {
    const r = run('permission');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => x.verdict),
      ['PASS'],
      explainRun(r),
    );
    assert.deepEqual(
      r.server.requests.filter((q) => q.api === 'responses').map((q) => q.tool),
      ['exec_command', 'exec_command', null],
      explainRun(r),
    );
    // The outside command ran (completed, or failed on the read-only folder) or, as codex 0.171.0 sometimes does in the
    // unprivileged tier on some machines (its own sandbox refusing it first), is left out of its event stream; either
    // way it never waits for an approval: the model got an answer to both tool calls (above) and the run PASSed.
    const log = fs.readFileSync(String(r.rows[0]?.worker_log), 'utf8');
    const outside = log.split('\n').filter((l) => /"type":"item.completed"[^\n]*"type":"command_execution"[^\n]*outside\.txt/.test(l));
    for (const l of outside) assert.match(l, /"status":"(?:completed|failed)"/, `codex ran the command without asking\n${explainRun(r)}`);
    assert.ok(!fs.existsSync(path.join(r.dir, 'work', 'outside.txt')), 'nothing was written outside the task dir');
    const codexHome = path.join(r.dir, 'codex-home');
    assert.deepEqual(
      { config: fs.readFileSync(path.join(codexHome, 'config.toml'), 'utf8'), agents: fs.readFileSync(path.join(codexHome, 'AGENTS.md'), 'utf8') },
      seeded,
    );
    const sessions = fs
      .readdirSync(path.join(codexHome, 'sessions'), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.jsonl'));
    assert.equal(sessions.length, 1, `codex saved its session under $CODEX_HOME/sessions (found: ${sessions.join(', ') || 'nothing'})`);
  });
});
