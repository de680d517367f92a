import assert from 'node:assert/strict';
import {
  attemptEngine,
  graphGate,
  judge,
  judgeWork,
  MAX_LOST_WORKER_REQUEUES,
  nextStep,
  retryAfterSeconds,
  type CheckOutcome,
  type RetryPolicy,
  type WorkerOutcome,
} from '../../extension/core/run/decide';
import { STATUS, VERDICTS, statusInfo, type TaskStatus } from '../../schemas/status';

const LIMITS = { timeoutMs: 900_000, watchdogMs: 60_000, finalGraceMs: 30_000 };
const ok: WorkerOutcome = { exitCode: 0, signal: null, timedOut: false, cancelled: false, stalled: false, stoppedAfterFinal: false, spawnError: null };
const passed: CheckOutcome = { passed: true, cancelled: false, reason: '' };
const failed: CheckOutcome = { passed: false, cancelled: false, reason: 'the check exited 1: 3 tests failed' };

describe('judge: the verdict from receipts, the check and the engine error class', () => {
  const cases: {
    name: string;
    worker: Partial<WorkerOutcome>;
    check: CheckOutcome | null;
    errorClass?: 'rate_limit' | 'auth' | 'engine_error' | null;
    verdict: string;
    reason: RegExp;
  }[] = [
    { name: 'check passes, worker exit 0', worker: {}, check: passed, verdict: 'PASS', reason: /^$/ },
    {
      name: 'check passes, worker exit 1 (only the check decides)',
      worker: { exitCode: 1 },
      check: passed,
      verdict: 'PASS',
      reason: /^the worker exited 1, but the check passed$/,
    },
    {
      name: 'check fails, worker exit 0 ("done" does not mean working)',
      worker: {},
      check: failed,
      verdict: 'FAIL',
      reason: /^the check exited 1: 3 tests failed$/,
    },
    {
      name: 'check fails after a rate limit',
      worker: { exitCode: 1 },
      check: failed,
      errorClass: 'rate_limit',
      verdict: 'RATE_LIMITED',
      reason: /^the engine was rate-limited \(the check exited 1/,
    },
    {
      name: 'check fails after an auth error',
      worker: { exitCode: 1 },
      check: failed,
      errorClass: 'auth',
      verdict: 'FAIL',
      reason: /; the worker exited 1 \(auth\)$/,
    },
    {
      name: 'stopped after its final event, check passes',
      worker: { exitCode: null, signal: 'SIGTERM', stoppedAfterFinal: true },
      check: passed,
      verdict: 'PASS',
      reason: /final event but kept running; it was stopped after 30 s, but the check passed/,
    },
    {
      name: 'timed out: no check',
      worker: { timedOut: true, exitCode: null, signal: 'SIGKILL' },
      check: null,
      verdict: 'TIMEOUT',
      reason: /ran out of time after 900 s/,
    },
    { name: 'stalled: no check', worker: { stalled: true }, check: null, verdict: 'STALLED', reason: /printed nothing for 60 s/ },
    {
      name: 'could not start',
      worker: { spawnError: 'spawn codex ENOENT', exitCode: null },
      check: null,
      verdict: 'ERROR',
      reason: /could not start: spawn codex ENOENT/,
    },
    { name: 'cancelled during work', worker: { cancelled: true }, check: null, verdict: 'CANCELLED', reason: /cancelled/ },
    { name: 'cancelled during the check', worker: {}, check: { passed: false, cancelled: true, reason: '' }, verdict: 'CANCELLED', reason: /cancelled/ },
    {
      name: 'a rate-limit class with a passing check is still PASS',
      worker: { exitCode: 1 },
      check: passed,
      errorClass: 'rate_limit',
      verdict: 'PASS',
      reason: /but the check passed/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const j = judge({ ...ok, ...c.worker }, c.check, c.errorClass ?? null, LIMITS);
      assert.equal(j.verdict, c.verdict);
      assert.match(j.reason, c.reason);
    });
  }

  it('a reader of inputs (council reviewer, chair, validator) that did not end on its own is ERROR though the check passed on its file; one that ended on its own, or whose check failed, is judged as any worker', () => {
    const reader = (w: Partial<WorkerOutcome>, check: CheckOutcome) => judge({ ...ok, ...w }, check, null, LIMITS, true);
    assert.deepEqual(reader({}, passed), { verdict: 'PASS', reason: '' });
    for (const [w, why] of [
      [
        { exitCode: 137 },
        /^the worker \(it reads other tasks' work: inputs\) exited 137 \(128 \+ SIGKILL: killed by a signal\), so it did not end on its own: its answer is not counted, whatever its output or files hold; the check passed on what it left$/,
      ],
      [{ exitCode: null, signal: 'SIGKILL' }, /was killed by SIGKILL, so it did not end on its own/],
      [{ exitCode: 1 }, /exited 1, so it did not end on its own/],
      [
        { exitCode: null, signal: 'SIGTERM', stoppedAfterFinal: true },
        /printed its final event but kept running and was stopped after 30 s, so it did not end on its own/,
      ],
    ] as const) {
      const j = reader(w, passed);
      assert.equal(j.verdict, 'ERROR', JSON.stringify(w));
      assert.match(j.reason, why);
    }
    assert.equal(reader({ exitCode: 137 }, failed).verdict, 'FAIL');
    // Not a reader: only the check decides, as before.
    assert.equal(judge({ ...ok, exitCode: 137 }, passed, null, LIMITS).verdict, 'PASS');
  });

  it('judgeWork leaves a worker that ended normally to the check', () => {
    assert.equal(judgeWork(ok, LIMITS), null);
    assert.equal(judgeWork({ ...ok, exitCode: 2 }, LIMITS), null);
  });
});

describe('nextStep: retry, requeue after a backoff, or done', () => {
  const policy: RetryPolicy = { maxAttempts: 2, maxRateLimitRequeues: 5, rateLimitBaseMs: 1000, retryAfterS: null, random: 0 };
  const cases: {
    name: string;
    history: { verdict: (typeof VERDICTS)[number]; used: number; rateLimited: number; stopped?: boolean };
    policy?: Partial<RetryPolicy>;
    next: string;
    afterMs?: number;
  }[] = [
    { name: 'PASS is done', history: { verdict: 'PASS', used: 0, rateLimited: 0 }, next: 'done' },
    { name: 'first FAIL retries', history: { verdict: 'FAIL', used: 0, rateLimited: 0 }, next: 'retry' },
    { name: 'second FAIL is done (max_attempts 2)', history: { verdict: 'FAIL', used: 1, rateLimited: 0 }, next: 'done' },
    { name: 'TIMEOUT retries like a FAIL', history: { verdict: 'TIMEOUT', used: 0, rateLimited: 0 }, next: 'retry' },
    { name: 'STALLED retries like a FAIL', history: { verdict: 'STALLED', used: 0, rateLimited: 0 }, next: 'retry' },
    { name: 'ERROR is not retried', history: { verdict: 'ERROR', used: 0, rateLimited: 0 }, next: 'done' },
    { name: 'max_attempts 1: a FAIL is done', history: { verdict: 'FAIL', used: 0, rateLimited: 0 }, policy: { maxAttempts: 1 }, next: 'done' },
    { name: 'a stopped task is done even after a FAIL', history: { verdict: 'FAIL', used: 0, rateLimited: 0, stopped: true }, next: 'done' },
    { name: 'first rate limit: requeue after the base', history: { verdict: 'RATE_LIMITED', used: 0, rateLimited: 0 }, next: 'requeue', afterMs: 1000 },
    { name: 'third rate limit: base × 4', history: { verdict: 'RATE_LIMITED', used: 0, rateLimited: 2 }, next: 'requeue', afterMs: 4000 },
    {
      name: 'full jitter doubles at most',
      history: { verdict: 'RATE_LIMITED', used: 0, rateLimited: 0 },
      policy: { random: 0.999 },
      next: 'requeue',
      afterMs: 1999,
    },
    {
      name: 'a Retry-After longer than the backoff wins',
      history: { verdict: 'RATE_LIMITED', used: 0, rateLimited: 0 },
      policy: { retryAfterS: 7 },
      next: 'requeue',
      afterMs: 7000,
    },
    {
      name: 'a shorter Retry-After does not undercut the backoff',
      history: { verdict: 'RATE_LIMITED', used: 0, rateLimited: 4 },
      policy: { retryAfterS: 1 },
      next: 'requeue',
      afterMs: 16000,
    },
    { name: 'rate limits past the requeue allowance: done', history: { verdict: 'RATE_LIMITED', used: 0, rateLimited: 5 }, next: 'done' },
    {
      name: 'a requeue does not depend on attempts left',
      history: { verdict: 'RATE_LIMITED', used: 1, rateLimited: 0 },
      policy: { maxAttempts: 1 },
      next: 'requeue',
      afterMs: 1000,
    },
    { name: 'CANCELLED is done', history: { verdict: 'CANCELLED', used: 0, rateLimited: 0 }, next: 'done' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const next = nextStep({ stopped: false, ...c.history }, { ...policy, ...c.policy });
      assert.equal(next.kind, c.next);
      if (c.afterMs !== undefined) assert.equal(next.kind === 'requeue' ? next.afterMs : null, c.afterMs);
    });
  }

  it('a lost pool worker: INTERRUPTED requeues at once without an attempt, at most MAX_LOST_WORKER_REQUEUES times; a local INTERRUPTED is done', () => {
    const lost = (n: number, extra: Partial<RetryPolicy> = {}) =>
      nextStep({ verdict: 'INTERRUPTED', used: 0, rateLimited: 0, stopped: false, lostWorker: { lostRequeues: n } }, { ...policy, maxAttempts: 1, ...extra });
    assert.deepEqual(lost(0), { kind: 'requeue', afterMs: 0, lostWorker: true });
    assert.deepEqual(lost(MAX_LOST_WORKER_REQUEUES - 1), { kind: 'requeue', afterMs: 0, lostWorker: true });
    assert.deepEqual(lost(MAX_LOST_WORKER_REQUEUES), { kind: 'done' });
    assert.deepEqual(lost(1, { maxLostWorkerRequeues: 1 }), { kind: 'done' });
    assert.deepEqual(nextStep({ verdict: 'INTERRUPTED', used: 0, rateLimited: 0, stopped: false }, policy), { kind: 'done' });
    assert.deepEqual(nextStep({ verdict: 'INTERRUPTED', used: 0, rateLimited: 0, stopped: true, lostWorker: { lostRequeues: 0 } }, policy), { kind: 'done' });
  });

  it('reads Retry-After as engines print it', () => {
    assert.equal(retryAfterSeconds('HTTP 429 Too Many Requests\nretry-after: 7\n'), 7);
    assert.equal(retryAfterSeconds('{"error":{"code":429,"retry_after":2.5}}'), 2.5);
    assert.equal(retryAfterSeconds('no hint here'), null);
  });
});

describe('the status table', () => {
  it('holds one row per status, and the retryable verdicts are exactly FAIL, TIMEOUT, STALLED', () => {
    assert.deepEqual(
      VERDICTS.filter((v) => STATUS[v].retryable),
      ['FAIL', 'TIMEOUT', 'STALLED'],
    );
    assert.deepEqual(
      VERDICTS.filter((v) => STATUS[v].requeued),
      ['RATE_LIMITED'],
    );
  });

  const rows: [TaskStatus, boolean, boolean, string][] = [
    // status, final, judged, bucket
    ['queued', false, false, 'queued'],
    ['running', false, false, 'active'],
    ['retry_queued', false, false, 'active'],
    ['PASS', true, true, 'passed'],
    ['FAIL', true, true, 'failed'],
    ['TIMEOUT', true, true, 'failed'],
    ['STALLED', true, true, 'failed'],
    ['ERROR', true, false, 'failed'],
    ['RATE_LIMITED', true, false, 'failed'],
    ['INTERRUPTED', true, false, 'failed'],
    ['CANCELLED', true, false, 'other'],
    ['SKIPPED', true, false, 'other'],
    ['BUDGET_EXCEEDED', true, false, 'other'],
    ['BLOCKED', true, false, 'other'],
  ];
  for (const [status, final, judged, bucket] of rows) {
    it(`${status}: final ${final}, judged ${judged}, bucket ${bucket}`, () => {
      assert.equal(STATUS[status].final, final);
      assert.equal(STATUS[status].judged, judged);
      assert.equal(STATUS[status].bucket, bucket);
    });
  }

  it('resume runs again everything final but PASS and SKIPPED', () => {
    const resumed = (Object.keys(STATUS) as TaskStatus[]).filter((s) => STATUS[s].final && STATUS[s].resumable);
    assert.deepEqual(resumed.sort(), ['BLOCKED', 'BUDGET_EXCEEDED', 'CANCELLED', 'ERROR', 'FAIL', 'INTERRUPTED', 'RATE_LIMITED', 'STALLED', 'TIMEOUT']);
  });

  it('BLOCKED is never retried or requeued: it is released only by its prerequisite (resume, rerun)', () => {
    assert.equal(STATUS.BLOCKED.retryable, false);
    assert.equal(STATUS.BLOCKED.requeued, false);
  });

  it('an unknown status (a newer record) reads as unfinished, never as passed', () => {
    assert.deepEqual(statusInfo('SOMETHING_NEW'), { final: false, retryable: false, requeued: false, judged: false, resumable: true, bucket: 'other' });
  });
});

describe('attemptEngine: which engine and model attempt N runs on (fallback)', () => {
  const defaults: Record<string, string | null> = { codex: 'gpt-5-codex', opencode: 'oc-default', claude: 'sonnet', script: null };
  const def = (e: string) => defaults[e] ?? null;
  const primary = { engine: 'codex', model: 'gpt-5-mini' };
  const chain = [
    { engine: 'opencode', model: null },
    { engine: 'claude', model: 'opus' },
  ];
  const rows: { name: string; n: number; fallback: { engine: string; model: string | null }[]; want: { engine: string; model: string | null } }[] = [
    { name: "attempt 1 runs on the task's own engine and model", n: 1, fallback: chain, want: { engine: 'codex', model: 'gpt-5-mini' } },
    {
      name: 'attempt 2 runs on the first entry, its default model when none is given',
      n: 2,
      fallback: chain,
      want: { engine: 'opencode', model: 'oc-default' },
    },
    { name: 'attempt 3 runs on the second entry with its model', n: 3, fallback: chain, want: { engine: 'claude', model: 'opus' } },
    { name: 'past the list the last entry goes on', n: 5, fallback: chain, want: { engine: 'claude', model: 'opus' } },
    { name: "no fallback: every attempt on the task's engine", n: 3, fallback: [], want: { engine: 'codex', model: 'gpt-5-mini' } },
    { name: 'an engine without a default model gives null', n: 2, fallback: [{ engine: 'script', model: null }], want: { engine: 'script', model: null } },
    { name: 'attempt 0 (nothing counted yet) is the first', n: 0, fallback: chain, want: { engine: 'codex', model: 'gpt-5-mini' } },
  ];
  for (const r of rows) it(r.name, () => assert.deepEqual(attemptEngine(r.n, primary, r.fallback, def), r.want));
  it("a task without a model gets its engine's default on attempt 1", () => {
    assert.deepEqual(attemptEngine(1, { engine: 'codex', model: null }, chain, def), { engine: 'codex', model: 'gpt-5-codex' });
  });
});

describe('graphGate: may a task with `after` start', () => {
  const rows: { name: string; pre: { key: string; status: string; where?: string }[]; kind: string; reason?: RegExp }[] = [
    { name: 'no prerequisites: ready', pre: [], kind: 'ready' },
    {
      name: 'all passed: ready',
      pre: [
        { key: 'a', status: 'PASS' },
        { key: 'b', status: 'PASS' },
      ],
      kind: 'ready',
    },
    {
      name: 'one still running: wait',
      pre: [
        { key: 'a', status: 'PASS' },
        { key: 'b', status: 'running' },
      ],
      kind: 'wait',
    },
    { name: 'one retrying: wait', pre: [{ key: 'a', status: 'retry_queued' }], kind: 'wait' },
    {
      name: 'one FAIL: blocked, naming it and its verdict',
      pre: [
        { key: 'a', status: 'PASS' },
        { key: 'b', status: 'FAIL' },
      ],
      kind: 'blocked',
      reason: /^prerequisite b ended FAIL, not PASS/,
    },
    {
      name: 'a final failure blocks even while another runs',
      pre: [
        { key: 'a', status: 'running' },
        { key: 'b', status: 'ERROR' },
      ],
      kind: 'blocked',
      reason: /prerequisite b ended ERROR/,
    },
    {
      name: 'a blocked prerequisite blocks (the chain goes on)',
      pre: [{ key: 'b', status: 'BLOCKED' }],
      kind: 'blocked',
      reason: /prerequisite b ended BLOCKED/,
    },
    {
      name: 'SKIPPED is not PASS',
      pre: [{ key: 'a', status: 'SKIPPED', where: 'in run r1' }],
      kind: 'blocked',
      reason: /^prerequisite a \(in run r1\) ended SKIPPED/,
    },
    { name: 'CANCELLED is not PASS', pre: [{ key: 'a', status: 'CANCELLED' }], kind: 'blocked', reason: /ended CANCELLED/ },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const g = graphGate(r.pre);
      assert.equal(g.kind, r.kind);
      if (r.reason) assert.match((g as { reason: string }).reason, r.reason);
    });
  }
});
