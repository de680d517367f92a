import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { ensureCli, type AgentCliName } from './agent-clis';
import { CLI } from './cli';
import { explainRun, runRealTask, type RealRun, type RealTaskOptions } from './real-engines';
import type { RecordedRequest } from '../fixtures/model-server';

// The scenarios and assertions the real-engine suites share (test/e2e/real-claude.e2e.test.ts,
// test/e2e/real-gemini.e2e.test.ts): each suite runs its scenarios at once (they share nothing: each its own server,
// homes and folders), then each `it` reads one run.

/** A reviewer's answer asking for changes, and one approving. */
export const REVIEW_CHANGES = '{"verdict": "changes", "concerns": ["alpha.txt: also say it twice"]}';
export const REVIEW_APPROVE = '{"verdict": "approve", "concerns": []}';

/**
 * True for a review prompt: it names the answer's form; a worker's prompt does not. `body` is the raw request, where
 * the form's quotes are escaped once (JSON) or more (opencode sends the prompt JSON-encoded inside the JSON).
 */
export const isReviewPrompt = (body: string): boolean => /approve\\*" \| \\*"changes/.test(body);

/**
 * A task whose first attempt FAILs its check and whose retry PASSes: the check prints a line its own text does not
 * hold ($((6*7))), and the script writes the right content only once the prompt carries that output, which only the
 * retry's can.
 */
export function retryScenario(base: RealTaskOptions): RealTaskOptions {
  return {
    ...base,
    mode: 'plain',
    server: { content: (body) => (body.includes('CHECK-42') ? 'alpha ready' : 'alpha wrong') },
    task: { max_attempts: 2, check: "grep -x 'alpha ready' alpha.txt || { echo \"CHECK-$((6*7)): alpha.txt must hold the line 'alpha ready'\"; exit 1; }" },
  };
}

/** A worker reviewed by the same engine, whose first review asks for changes and whose second approves. */
export function reviewScenario(base: RealTaskOptions): RealTaskOptions {
  let reviewsAnswered = 0;
  return {
    ...base,
    mode: 'worktree',
    server: { finalText: (body) => (isReviewPrompt(body) ? (reviewsAnswered++ === 0 ? REVIEW_CHANGES : REVIEW_APPROVE) : 'Done: created alpha.txt') },
    task: { max_attempts: 2, review: { engines: [{ engine: base.engine, model: base.model }] } },
  };
}

/** Runs every scenario at once (runRealTask, named `<prefix>-<name>`); resolves to a lookup of the runs by name. */
export async function runScenarios(prefix: string, scenarios: Record<string, RealTaskOptions>): Promise<(name: string) => RealRun> {
  const done = await Promise.all(Object.entries(scenarios).map(async ([name, o]) => [name, await runRealTask({ ...o, name: `${prefix}-${name}` })] as const));
  const runs = new Map(done);
  return (name) => {
    const run = runs.get(name);
    if (!run) throw new Error(`no scenario ${name}`);
    return run;
  };
}

/**
 * The retry scenario's run: FAIL then PASS, the check output reached the model (`api`), every token on one row (with
 * `usageKnown` false — a CLI that prints no usage — every row's tokens unknown instead).
 */
export function assertRetried(r: RealRun, api: RecordedRequest['api'], usageKnown = true): void {
  assert.equal(r.result.exitCode, 0, explainRun(r));
  assert.deepEqual(
    r.rows.map((x) => [x.attempt, x.verdict, x.retry, x.check_exit_code]),
    [
      [1, 'FAIL', false, 1],
      [2, 'PASS', true, 0],
    ],
    explainRun(r),
  );
  assert.ok(
    r.server.requests.some((q) => q.api === api && JSON.stringify(q.body).includes('CHECK-42')),
    'the retry prompt reached the model with the check output',
  );
  assertUsageSplit(r, usageKnown);
  assert.equal(fs.readFileSync(path.join(r.dir, 'work', 'alpha', 'alpha.txt'), 'utf8'), 'alpha ready\n');
}

/**
 * Each row holds its own calls' tokens: together, everything the server sent. Where the CLI prints no usage
 * (`usageKnown` false), every row's tokens are unknown (null), never 0.
 */
function assertUsageSplit(r: RealRun, usageKnown: boolean): void {
  if (!usageKnown) {
    assert.deepEqual(
      r.rows.map((x) => [x.tokens_in, x.tokens_out]),
      r.rows.map(() => [null, null]),
      explainRun(r),
    );
    return;
  }
  const sent = r.server.usageSent;
  assert.equal(
    r.rows.reduce((n, x) => n + Number(x.tokens_in), 0),
    sent.input,
    `every token the server sent is on exactly one row\n${explainRun(r)}`,
  );
  assert.equal(
    r.rows.reduce((n, x) => n + Number(x.tokens_out), 0),
    sent.output,
  );
}

/** The review scenario's run: work, changes, work again, approve — all on `engine`; every token on one row (assertRetried). */
export function assertReviewedTwice(r: RealRun, engine: AgentCliName, usageKnown = true): void {
  assert.equal(r.result.exitCode, 0, explainRun(r));
  const rows = r.rows.map((x) => [x.step, x.attempt, x.worker_engine, x.verdict, (x.review as { verdict?: string } | undefined)?.verdict ?? null]);
  assert.deepEqual(
    rows,
    [
      ['work', 1, engine, 'FAIL', null],
      ['review', 1, engine, 'FAIL', 'changes'],
      ['work', 2, engine, 'PASS', null],
      ['review', 2, engine, 'PASS', 'approve'],
    ],
    explainRun(r),
  );
  assert.match(String(r.rows[0]?.notes), /asked for changes: \(1\) alpha\.txt: also say it twice/);
  assertUsageSplit(r, usageKnown);
}

/** A run whose first model call (`api`) was answered 429: RATE_LIMITED, requeued, and the requeue PASSes with every token. */
export function assertRequeued(r: RealRun, api: RecordedRequest['api']): void {
  assert.equal(r.result.exitCode, 0, explainRun(r));
  assert.deepEqual(
    r.rows.map((x) => [x.attempt, x.verdict]),
    [
      [1, 'RATE_LIMITED'],
      [2, 'PASS'],
    ],
    explainRun(r),
  );
  assert.equal(r.server.requests.find((q) => q.api === api)?.reply, 'rate_limited');
  const pass = r.rows[1] as Record<string, unknown>;
  assert.deepEqual([pass.tokens_in, pass.tokens_out], [r.server.usageSent.input, r.server.usageSent.output]);
}

/** `verdict doctor` (JSON and text) in the run's homes, with `engine`'s CLI on PATH: that engine's entry and the text. */
export async function doctorOf(engine: AgentCliName, r: RealRun): Promise<{ entry: Record<string, unknown> | undefined; json: string; text: string }> {
  const env = { PATH: [await ensureCli(engine), process.env.PATH ?? ''].join(path.delimiter), HOME: r.userHome };
  // The two doctors at once: each probes in a throwaway home of its own (extension/cli/probe-home.ts).
  const doctor = (...json: string[]) => execa('node', [CLI, 'doctor', ...json, '--home', r.home], { env, extendEnv: false, reject: false, stdin: 'ignore' });
  const [asJson, text] = await Promise.all([doctor('--json'), doctor()]);
  const entry = (JSON.parse(String(asJson.stdout)) as { engines: Array<Record<string, unknown>> }).engines.find((e) => e.name === engine);
  return { entry, json: String(asJson.stdout), text: String(text.stdout) };
}
