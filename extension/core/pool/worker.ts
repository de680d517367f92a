/**
 * `verdict pool worker`: takes attempts of the engines this machine has from the pool's queues and runs each exactly
 * as a local attempt runs (run/attempt.ts runAttempt over the default steps: its own checkout of the run's remote, the
 * sandbox, the seal, the guard, the check, deliver), then pushes the sealed commit to the remote and settles the
 * attempt's row. Its heartbeat row is renewed every HEARTBEAT_MS; a drain (Ctrl-C) claims nothing new and lets
 * running attempts finish. The engines' logins stay on this machine: nothing of its environment enters the queue.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import PgBoss from 'pg-boss';
import { simpleGit } from 'simple-git';
import type { EngineSpec } from '../../../engines/types';
import { runDir, worktreePath } from '../config/home';
import { withLock } from '../fs/lock';
import { gitFor } from '../git/safe-git';
import { removeWorktreeLocked } from '../git/worktree-lock';
import { StateFile, type AttemptState, type RunState } from '../live/state';
import type { Manifest, TaskSpec } from '../manifest/types';
import type { SandboxMode } from '../process/sandbox';
import { runAttempt } from '../run/attempt';
import { flatRecord, recordFiles, type AttemptRecord } from '../run/attempt-record';
import { sandboxView, taskContainment } from '../run/containment';
import { preflight } from '../run/preflight';
import { RunSpend, usageTokens } from '../run/spend';
import { freshRuntime, type AttemptContext, type TaskRuntime } from '../run/steps/context';
import { poolPartUses, workflowReaderEngines } from '../run/workflows';
import { ensureQueue, push } from './dispatch';
import { killOrphanedSandboxes } from './orphans';
import { BadJobError, parseJob, queueOf, sealedRef, type AttemptJob, type JobSpend } from './payload';
import { ensurePoolSchema, HEARTBEAT_MS, leaseMs, poolDb, withPoolSetupLock } from './schema';
import { WORKFLOW_SECTIONS } from '../run/workflows';

/** How long an idle slot waits before asking the queues again, ms. */
export const IDLE_POLL_MS = 500;
/** How often at most a worker writes a running attempt's spend into its row (spendReporter), ms. */
export const SPEND_REPORT_MS = 250;
/** Bytes of the worker's log kept in Postgres (the full log stays on the worker, named in the row's log_dir). */
export const LOG_TAIL_BYTES = 16 * 1024;

/** Options of {@link runPoolWorker}. */
export interface PoolWorkerOptions {
  url: string;
  /** This machine's VERDICT_HOME (see workerHome). */
  home: string;
  /** The name this worker shows in rows and `pool status` (default: the short hostname). */
  host: string;
  slots: number;
  /** The engines this worker takes attempts of (their binaries are checked before each attempt, as on a local run). */
  engines: ReadonlyMap<string, EngineSpec>;
  /** Every engine its config defines: a task's reviewers may be others than the engines it claims by (default: engines). */
  known?: ReadonlyMap<string, EngineSpec>;
  env: NodeJS.ProcessEnv;
  sandbox: SandboxMode;
  /** Unix sockets every sandboxed step may reach: this worker's config `sockets` (absolute or `~/…`); absent: none. */
  sockets?: readonly string[];
  /** More places no sandboxed step may read: this worker's config `hide` (absolute or `~/…`). */
  hide?: readonly string[];
  /** Hidden places every sandboxed step may read: this worker's config `expose` (absolute or `~/…`). */
  expose?: readonly string[];
  /** Aborting drains: nothing new is claimed, running attempts finish, then the worker ends. */
  signal: AbortSignal;
  /** One line per event (claimed, finished, outage). */
  log: (line: string) => void;
}

/**
 * Runs the worker until `signal` aborts and its running attempts are settled.
 * @throws Error when the database cannot be reached at start
 */
export async function runPoolWorker(opts: PoolWorkerOptions): Promise<void> {
  const w = await startWorker(opts);
  const beat = heartbeat(w);
  const timer = setInterval(() => void beat(), Math.min(HEARTBEAT_MS, Math.floor(leaseMs(opts.env) / 3)));
  const wake = () => undefined;
  opts.signal.addEventListener('abort', wake);

  const slot = async () => {
    let turn = 0;
    while (!opts.signal.aborted) {
      const queue = queueOf(w.engines[turn++ % w.engines.length]!);
      const [job] = await w.boss.fetch<unknown>(queue, { batchSize: 1 }).catch(() => []);
      if (!job) {
        if (turn % w.engines.length === 0) await sleep(IDLE_POLL_MS, opts.signal);
        continue;
      }
      await handleJob(w, queue, job);
    }
  };

  await beat();
  await Promise.all(Array.from({ length: opts.slots }, slot));
  // Draining: every slot has finished its attempt.
  clearInterval(timer);
  await w.db
    .query(`UPDATE verdict_pool_workers SET stopped_at = now(), draining = true, running = '{}' WHERE worker_id = $1`, [w.workerId])
    .catch(() => undefined);
  await w.boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await w.db.end().catch(() => undefined);
  opts.log(`worker ${w.workerId} drained and stopped`);
}

/** A started worker: its database and queue connections, its id and engines, and the attempts it runs by `run/key/attempt`. */
interface Worker {
  opts: PoolWorkerOptions;
  db: ReturnType<typeof poolDb>;
  boss: PgBoss;
  workerId: string;
  engines: string[];
  running: Map<string, TaskRuntime>;
}

/**
 * Kills what a dead worker of this home left running, makes the schema and the engines' queues, and registers the
 * worker's row.
 * @throws Error when the database cannot be reached
 */
async function startWorker(opts: PoolWorkerOptions): Promise<Worker> {
  // What a worker of this home that died with its spawn helper left running (pool/orphans.ts), before any new step.
  const orphans = killOrphanedSandboxes(workerHome(opts.home), opts.host);
  if (orphans.length) opts.log(`killed ${orphans.length} sandbox(es) that outlived a pool worker of this home (pid ${orphans.join(', ')})`);
  const db = poolDb(opts.url);
  await ensurePoolSchema(db);
  const boss = new PgBoss({ connectionString: opts.url, schedule: false, max: Math.max(2, opts.slots + 1) });
  boss.on('error', () => undefined);
  const engines = [...opts.engines.keys()];
  // pg-boss's schema and the queues, one process at a time (workers often start together).
  await withPoolSetupLock(db, async () => {
    await boss.start();
    for (const e of engines) await ensureQueue(boss, queueOf(e));
  });
  const workerId = `${opts.host}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
  await db.query(`INSERT INTO verdict_pool_workers (worker_id, host, pid, slots, engines) VALUES ($1, $2, $3, $4, $5)`, [
    workerId,
    opts.host,
    process.pid,
    opts.slots,
    engines,
  ]);
  opts.log(`worker ${workerId}: ${opts.slots} slot(s), engines ${engines.join(', ')}`);
  return { opts, db, boss, workerId, engines, running: new Map() };
}

/**
 * The heartbeat: renews the worker's row (draining, running attempts) and stops the attempts whose cancel was
 * requested. Never throws: an outage is logged once, and once more when the database answers again.
 */
function heartbeat(w: Worker): () => Promise<void> {
  let down = false;
  return async () => {
    try {
      await w.db.query(`UPDATE verdict_pool_workers SET heartbeat_at = now(), draining = $2, running = $3 WHERE worker_id = $1`, [
        w.workerId,
        w.opts.signal.aborted,
        [...w.running.keys()],
      ]);
      const stop = await w.db.query(
        `SELECT run_id, task_key, attempt FROM verdict_pool_attempts WHERE worker_id = $1 AND record IS NULL AND cancel_requested`,
        [w.workerId],
      );
      for (const r of stop.rows as { run_id: string; task_key: string; attempt: number }[])
        w.running.get(`${r.run_id}/${r.task_key}/${r.attempt}`)?.abort.abort();
      if (down) w.opts.log('the pool database answers again');
      down = false;
    } catch (e) {
      if (!down) w.opts.log(`the pool database does not answer (${(e as Error).message}); running attempts go on, their results wait`);
      down = true;
    }
  };
}

/** Claims, runs and settles one job; completes it in the queue once its row is settled (by this worker or before). */
async function handleJob(w: Worker, queue: string, job: PgBoss.Job<unknown>): Promise<void> {
  const { opts, db, boss, workerId } = w;
  let parsed: AttemptJob;
  try {
    parsed = parseJob(job.data);
    if (!opts.engines.has(parsed.engine)) throw new BadJobError(`engine ${parsed.engine} is not one of this worker's (${w.engines.join(', ')})`);
    if (queueOf(parsed.engine) !== queue) throw new BadJobError(`a ${parsed.engine} attempt in queue ${queue}`);
  } catch (e) {
    // Refused, and recorded where the orchestrator looks (when the payload names a row): never run.
    const d = (job.data ?? {}) as Record<string, unknown>;
    opts.log(`refused job ${job.id}: ${(e as Error).message}`);
    await db
      .query(
        `UPDATE verdict_pool_attempts SET record = $4, finished_at = now(), worker_id = $5, host = $6 WHERE run_id = $1 AND task_key = $2 AND attempt = $3 AND record IS NULL`,
        [
          String(d.runId),
          String(d.key),
          Number(d.attempt) || 0,
          JSON.stringify({
            verdict: 'ERROR',
            reason: `refused by the pool worker on ${opts.host}: ${(e as Error).message}`,
            settledBy: 'orchestrator',
            host: opts.host,
          }),
          workerId,
          opts.host,
        ],
      )
      .catch(() => undefined);
    // Cancelled, not failed: a refused payload is never retried.
    await boss.cancel(queue, job.id).catch(() => undefined);
    return;
  }
  const id = `${parsed.runId}/${parsed.key}/${parsed.attempt}`;
  if (!(await claimJob(w, parsed))) {
    await boss.complete(queue, job.id, { skipped: 'settled or held elsewhere' }).catch(() => undefined);
    return;
  }
  opts.log(`claimed ${id} (${parsed.engine})`);
  const task = taskOf(parsed, opts);
  w.running.set(id, task);
  const spend = spendReporter(w, parsed, task);
  let result: { record: Record<string, unknown>; tail: string; logDir: string | null };
  try {
    result = await runJob(parsed, task, opts, spend.report).finally(() => spend.stop());
  } catch (e) {
    result = {
      record: { verdict: 'ERROR', reason: `the pool worker on ${opts.host} could not run it: ${(e as Error).message}`, host: opts.host, workerId },
      tail: '',
      logDir: null,
    };
  }
  result.record.workerId = workerId;
  // Settled once, retried through an outage: the record is never lost and never written twice.
  for (;;) {
    try {
      const done = await db.query(
        `UPDATE verdict_pool_attempts SET record = $5, log_tail = $6, log_dir = $7, finished_at = now() WHERE run_id = $1 AND task_key = $2 AND attempt = $3 AND worker_id = $4 AND record IS NULL RETURNING attempt`,
        [parsed.runId, parsed.key, parsed.attempt, workerId, JSON.stringify(result.record), result.tail, result.logDir],
      );
      opts.log(`${id}: ${String(result.record.verdict)}${done.rowCount ? '' : ' (already settled elsewhere: not recorded)'}`);
      await boss.complete(queue, job.id).catch(() => undefined);
      break;
    } catch {
      await sleep(1000);
    }
  }
  w.running.delete(id);
}

/**
 * Keeps the running attempt's row told what it has spent so far (payload.ts JobSpend, verdict_pool_attempts.spend), for
 * the orchestrator's budgets: `report` is given every change, and the row is written at most every SPEND_REPORT_MS
 * with the latest figure (a write the database refuses is dropped: the next one, or the record at the end, says it).
 * A cancel the row asks for (the orchestrator stopping the attempt, as when the spend passed its budget) is seen by
 * each write and stops the attempt at once, before the heartbeat would. Nothing is written after `stop`.
 */
function spendReporter(w: Worker, job: AttemptJob, task: TaskRuntime): { report: (s: JobSpend) => void; stop: () => void } {
  let latest: JobSpend | null = null;
  let written: JobSpend | null = null;
  let timer: NodeJS.Timeout | null = null;
  let lastWrite = -Infinity;
  let stopped = false;
  const write = async () => {
    timer = null;
    if (stopped || !latest || latest === written) return;
    const s = (written = latest);
    lastWrite = Date.now();
    try {
      const r = await w.db.query(
        `UPDATE verdict_pool_attempts SET spend = $5 WHERE run_id = $1 AND task_key = $2 AND attempt = $3 AND worker_id = $4 AND record IS NULL RETURNING cancel_requested`,
        [job.runId, job.key, job.attempt, w.workerId, JSON.stringify(s)],
      );
      if ((r.rows[0] as { cancel_requested?: boolean } | undefined)?.cancel_requested) task.abort.abort();
    } catch {
      // The database does not answer: the heartbeat says so; the next write or the record carries the spend.
    }
  };
  return {
    report(s) {
      if (stopped || (latest && latest.usd === s.usd && latest.tokens === s.tokens)) return;
      latest = s;
      timer ??= setTimeout(() => void write(), Math.max(0, lastWrite + SPEND_REPORT_MS - Date.now()));
    },
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}

/**
 * Claims the attempt's row for this worker unless it is settled already, or held by a live worker (a retried job of
 * a lost one is taken over). The job is ours in the queue now: through an outage the claim is retried until the
 * database answers, or the job would sit claimed in the queue with nobody running it.
 * @returns whether this worker holds the attempt now
 */
async function claimJob(w: Worker, parsed: AttemptJob): Promise<boolean> {
  for (;;) {
    try {
      const claim = await w.db.query(
        `UPDATE verdict_pool_attempts a SET worker_id = $4, host = $5, claimed_at = now()
         WHERE run_id = $1 AND task_key = $2 AND attempt = $3 AND record IS NULL AND NOT cancel_requested
           AND (a.worker_id IS NULL OR a.worker_id = $4 OR NOT EXISTS (SELECT 1 FROM verdict_pool_workers w WHERE w.worker_id = a.worker_id AND w.heartbeat_at > now() - ($6::double precision * interval '1 millisecond')))
         RETURNING attempt`,
        [parsed.runId, parsed.key, parsed.attempt, w.workerId, w.opts.host, leaseMs(w.opts.env)],
      );
      return (claim.rowCount ?? 0) > 0;
    } catch {
      await sleep(1000);
    }
  }
}

/**
 * Where the worker keeps its records: its VERDICT_HOME itself (attempt records under runs/<run>/tasks/<key>/, worktrees,
 * its own runs.jsonl; the clones of remotes under pool/checkouts/), hidden from every step as on a local run. A pool
 * run's folder here has no state.json (the run lives on its orchestrator), so this machine's views list no such run.
 */
export function workerHome(home: string): string {
  return home;
}

/**
 * The task's spec built from the payload alone: never full access, one attempt here, no fallbacks and no prerequisites
 * (the orchestrator keeps them); inputs, the workflows' parts and the suite as the payload gives them.
 */
function specOf(job: AttemptJob): TaskSpec {
  return {
    key: job.key,
    spec: job.spec,
    check: job.check,
    expectFiles: job.expectFiles,
    engine: job.engine,
    model: job.model,
    taskType: job.taskType,
    timeoutMs: job.timeoutMs,
    checkTimeoutMs: job.checkTimeoutMs,
    watchdogMs: job.watchdogMs,
    engineArgs: job.engineArgs,
    verified: job.verified,
    // A payload never turns the sandbox off: full access is not a field a worker takes.
    fullAccess: false,
    network: job.network,
    protect: job.protect,
    maxAttempts: 1,
    fallback: [],
    after: [],
    review: job.review,
    guard: job.guard,
    allowDeps: job.allowDeps,
    allowPaths: job.allowPaths,
    ...(job.group !== null ? { group: job.group } : {}),
    ...(job.candidate !== null ? { candidate: job.candidate } : {}),
    // What to copy is the payload's (task.inputSources); the spec says only whether the names are anonymous.
    ...(job.inputs ? { inputs: { from: [], anonymous: job.inputs.anonymous } } : {}),
    // The workflows' parts (a test phase's phase files and their start commits, resolved by the orchestrator).
    ...poolPartUses(job.workflows).spec,
    ...(job.suite ? { suite: { command: job.suite.command, timeoutMs: job.suite.timeoutMs } } : {}),
  };
}

/** The task as the attempt's steps see it, built from the payload alone. */
function taskOf(job: AttemptJob, opts: PoolWorkerOptions): TaskRuntime {
  const spec = specOf(job);
  const wHome = workerHome(opts.home);
  // The attempts before this one ran elsewhere; runAttempt numbers this one after them.
  const earlier: AttemptState[] = Array.from({ length: job.attempt - 1 }, (_, i) => ({
    attempt: i + 1,
    phase: 'done',
    verdict: null,
    startedAt: 0,
    endedAt: null,
    workerPid: null,
    tokensIn: null,
    tokensOut: null,
    costMicroUsd: null,
    checkExitCode: null,
    dir: '',
    notes: 'ran on another pool worker',
  }));
  const task: TaskRuntime = {
    ...freshRuntime(),
    spec,
    engine: opts.engines.get(job.engine)!,
    containment: 'bwrap',
    used: job.retry ? 1 : 0,
    failure: job.failure,
    startFrom: job.startFrom,
    ...(job.inputs ? { inputSources: job.inputs.entries } : {}),
    state: {
      key: job.key,
      engine: job.engine,
      model: job.model,
      taskType: job.taskType,
      verified: job.verified,
      status: 'queued',
      dir: worktreePath(wHome, job.runId, job.key),
      branch: job.branch,
      commit: null,
      port: null,
      attempts: earlier,
    },
    summary: {
      key: job.key,
      verdict: 'CANCELLED',
      attempts: 0,
      durationMs: 0,
      tokens: 0,
      verified: job.verified,
      branch: job.branch,
      commit: null,
      reason: '',
      checkOutput: '',
    },
  };
  // What the workflows' parts do to the task (a critique's revision is marked so: its prompt says so, as a local one's does).
  poolPartUses(job.workflows).apply(task);
  return task;
}

/**
 * The state file of this one attempt, `runs/<run>/tasks/<key>/state-<attempt>.json` under the worker's home: a run of
 * one task (this one, running) in worktree mode, from the payload and the checkout `repo` of its remote. The run itself
 * lives on its orchestrator; this file is the attempt's own record here.
 */
function attemptStateFile(wHome: string, job: AttemptJob, task: TaskRuntime, repo: string, host: string, containment: RunState['containment']): StateFile {
  fs.mkdirSync(path.join(runDir(wHome, job.runId), 'tasks', job.key), { recursive: true });
  const stateFile = new StateFile(path.join(runDir(wHome, job.runId), 'tasks', job.key, `state-${job.attempt}.json`), {
    version: 1,
    runId: job.runId,
    runName: job.runName,
    manifestFile: `pool:${job.runId}`,
    identity: job.identity,
    host,
    pid: process.pid,
    status: 'running',
    startedAt: Date.now(),
    heartbeatAt: Date.now(),
    endedAt: null,
    maxParallel: 1,
    worktrees: true,
    repo,
    baseRef: job.baseSha,
    baseSha: job.baseSha,
    containment,
    paused: false,
    draining: false,
    control: [],
    tasks: [task.state],
  });
  return stateFile;
}

/**
 * The manifest of a run of this one attempt here, in worktree mode in the worker's `checkout` of the remote: no
 * budget (the run's is its orchestrator's, which the attempt's spend reaches as it streams: spendReporter).
 */
function jobManifest(job: AttemptJob, task: TaskRuntime, wHome: string, checkout: string): Manifest {
  return {
    file: `pool:${job.runId}`,
    runName: job.runName,
    workdir: wHome,
    maxParallel: 1,
    worktrees: true,
    repo: checkout,
    baseRef: job.baseSha,
    budgetUsd: null,
    budgetTokens: null,
    setup: job.setup,
    include: [],
    tasks: [task.spec],
    raw: {},
  };
}

/**
 * Runs one attempt here and pushes its sealed commit; returns the record for the row, the log tail and the logs' folder.
 * `onSpend` is told what the attempt (its engine and the reviewers run here) has spent so far at every change.
 */
async function runJob(
  job: AttemptJob,
  task: TaskRuntime,
  opts: PoolWorkerOptions,
  onSpend: (s: JobSpend) => void,
): Promise<{ record: Record<string, unknown>; tail: string; logDir: string }> {
  const wHome = workerHome(opts.home);
  const checkout = await syncCheckout(wHome, job);
  // A task dir left by an earlier attempt of this task on this worker: removed (its records stay in the attempt dirs).
  await dropTaskDir(checkout, task.state.dir, job.branch);
  const manifest = jobManifest(job, task, wHome, checkout);
  const known = opts.known ?? opts.engines;
  const pre = await preflight(
    manifest,
    known,
    opts.env,
    wHome,
    {
      sandbox: opts.sandbox,
      allowFullAccess: false,
      configSource: 'a pool worker never allows full_access',
    },
    workflowReaderEngines,
  );
  task.containment = taskContainment(pre.containment, false);
  const stateFile = attemptStateFile(wHome, job, task, checkout, opts.host, pre.containment.summary);
  const spend = new RunSpend(wHome, null, null);
  // No budget here (the run's is its orchestrator's): what the attempt spends goes to it as it streams.
  spend.onChange = (s) => onSpend({ usd: Math.round(s.spentMicroUsd), tokens: s.tokens ? Math.round(s.tokens.spent) : null });
  const ctx: AttemptContext = {
    sections: WORKFLOW_SECTIONS,
    opts: { manifest, home: wHome, identity: job.identity, engines: known, env: opts.env, sandbox: opts.sandbox },
    env: opts.env,
    runId: job.runId,
    stateFile,
    binaries: pre.binaries,
    repo: pre.repo,
    bwrap: pre.containment.bwrap,
    netstack: pre.containment.netstack,
    view: sandboxView({ sockets: opts.sockets, hide: [...(opts.hide ?? []), ...(job.hide ?? [])], expose: opts.expose }, opts.env),
    emit: () => undefined,
    spend,
    recordErrors: [],
    stateBaselines: new Map(),
  };
  // The attempt's engine holds its place in the spend (as the scheduler's admit gives a local attempt), so that what it
  // streams counts (RunSpend.progress) and reaches onSpend; without a budget nothing is refused.
  const hold = spend.admit(task.engine, task.state.model, task.spec);
  try {
    await runAttempt(ctx, task);
  } finally {
    if (typeof hold !== 'string' && !('waitFor' in hold))
      spend.settle(hold, task.records[0]?.costMicroUsd ?? null, usageTokens(task.records[0]?.usage ?? null));
    await spend.finish().catch(() => undefined);
    stateFile.state.status = 'finished';
    stateFile.state.endedAt = Date.now();
    await stateFile.close().catch(() => undefined);
  }
  const rec = task.records[0] as AttemptRecord;
  rec.host = opts.host;
  // Every sealed attempt's commit goes to the remote (refs/verdict/<run>/<key>/<n>); a PASS's also to the task branch.
  if (rec.seal) {
    const ref = `refs/verdict/${job.runId}/${job.key}/${job.attempt}`;
    await push(checkout, job.remote, rec.seal.sha, ref, true);
    if (rec.verdict === 'PASS' && rec.commit) await push(checkout, job.remote, rec.commit, `refs/heads/${job.branch}`, true);
  }
  await dropTaskDir(checkout, task.state.dir, job.branch);
  // Flat (each workflow's fields among the record's own), as verdict_pool_attempts.record has always held it.
  const { dir, ...record } = flatRecord(rec);
  const inputs = task.state.inputs ? { dir: task.state.inputs.dir, omitted: task.state.inputs.omitted } : undefined;
  return { record: { ...record, logDir: dir, ...(inputs ? { inputs } : {}) }, tail: tailOf(recordFiles(rec).worker), logDir: dir };
}

/**
 * This worker's clone of the run's remote (`<home>/pool/checkouts/<sha of the remote>`), fetched for the job: the
 * run's base and the task branches of its passed prerequisites. Serialized per clone.
 */
async function syncCheckout(wHome: string, job: AttemptJob): Promise<string> {
  const dir = path.join(wHome, 'pool', 'checkouts', crypto.createHash('sha256').update(job.remote).digest('hex').slice(0, 16));
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  return withLock(`${dir}.lock`, async () => {
    if (!fs.existsSync(path.join(dir, '.git'))) {
      fs.rmSync(dir, { recursive: true, force: true });
      await simpleGit().clone(job.remote, dir, ['--no-checkout', '--quiet']);
    }
    const inputs = [...new Set([...job.startFrom, ...(job.inputs?.entries ?? [])].map((e) => sealedRef(job.runId, e.commit)))];
    const refs = [
      `+refs/verdict/${job.runId}/base:refs/verdict/${job.runId}/base`,
      ...job.startFrom.map((p) => `+refs/verdict/${job.runId}/${p.key}/*:refs/verdict/${job.runId}/${p.key}/*`),
      ...inputs.map((r) => `+${r}:${r}`),
    ];
    await gitFor(dir).raw(['fetch', '--no-tags', '--quiet', '--', job.remote, ...refs]);
    for (const sha of [
      job.baseSha,
      ...job.startFrom.map((p) => p.commit),
      ...(job.inputs?.entries ?? []).map((e) => e.commit),
      ...poolPartUses(job.workflows).commits,
    ]) {
      await gitFor(dir)
        .raw(['cat-file', '-e', `${sha}^{commit}`])
        .catch(() => {
          throw new Error(`commit ${sha} is not on the remote ${job.remote}`);
        });
    }
    return dir;
  });
}

/**
 * Removes the task's worktree and local branch, when there (the work is on the remote), under the clone's worktree
 * lock: the other jobs of this worker add theirs in the same clone (see git/worktree-lock.ts). Never throws.
 */
async function dropTaskDir(checkout: string, dir: string, branch: string): Promise<void> {
  await removeWorktreeLocked(checkout, dir, { branch }).catch(() => fs.rmSync(dir, { recursive: true, force: true }));
}

function tailOf(file: string): string {
  try {
    const buf = fs.readFileSync(file);
    return buf.subarray(Math.max(0, buf.length - LOG_TAIL_BYTES)).toString('utf8');
  } catch {
    return '';
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done);
  });
}
