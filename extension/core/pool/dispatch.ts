/**
 * The orchestrator's side of the pool (`verdict run --pool URL`): a Step that, in place of the local steps, enqueues
 * the attempt on its engine's queue, waits for a worker's record of it and copies that record into the attempt. The
 * runner's loop, decisions (retry, fallback, graph, budget) and records stay exactly those of a local run: only where
 * the steps run changes. A worker that stops renewing its heartbeat for the lease loses the attempt: it is recorded
 * INTERRUPTED with `lostWorker`, which decide.ts requeues without using one of the task's attempts.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import PgBoss from 'pg-boss';
import { gitFor } from '../git/safe-git';
import { recordFiles, type AttemptRecord, type FlatFields } from '../run/attempt-record';
import { Cancelled, type AttemptContext, type AttemptIo, type Step, type TaskRuntime } from '../run/steps/context';
import type { Judgement } from '../run/decide';
import { ensurePoolSchema, leaseMs, poolDb, withPoolSetupLock } from './schema';
import { JOB_VERSION, parseJobSpend, queueOf, sealedRef, type AttemptJob, type JobInputs } from './payload';
import type { PoolTrust } from '../config/config';
import { recheckHere } from './recheck';
import { resolveInputs } from '../run/steps/inputs';
import { poolPartsOf, poolRecordTaken, poolStartFrom } from '../run/workflows';

/** How often the orchestrator looks at its attempts' rows, ms. */
export const DISPATCH_POLL_MS = 250;
/** pg-boss's retries of a job that was taken and never settled (expired, or failed back by the orchestrator). */
export const QUEUE_RETRIES = 5;
/**
 * After the run is cancelled (Ctrl-C, `verdict stop`), how long the orchestrator keeps trying to reach an unreachable
 * database to withdraw or cancel an attempt before it gives up and records the attempt INTERRUPTED, ms.
 */
export const CANCEL_GRACE_MS = 10_000;

/** The pool's database stayed unreachable for CANCEL_GRACE_MS after the run was cancelled. */
export class PoolUnreachable extends Error {
  constructor(cause: string) {
    super(`the pool's database stayed unreachable for ${CANCEL_GRACE_MS / 1000} s after the run was cancelled (${cause})`);
    this.name = 'PoolUnreachable';
  }
}

/** pg-boss's own expiry of a claimed job (a backstop: the heartbeat decides first), s: the task's limits plus this. */
const EXPIRY_MARGIN_S = 600;

/** Where the pool is. */
export interface PoolTarget {
  /** The pool's Postgres (queue and tables). */
  url: string;
  /** The git remote every worker fetches from and pushes to. */
  remote: string;
  /**
   * Whose word a worker's PASS rests on (the config's pool.trust): `check` (default) — re-run here on the reported
   * commit before it counts (pool/recheck.ts); `worker` — taken as reported. Recorded in every row (`pool.trust`).
   */
  trust?: PoolTrust;
}

/** The worker's record of an attempt as stored in verdict_pool_attempts.record (its FlatRecord without local paths). */
export type RemoteRecord = Omit<AttemptRecord, 'dir' | 'workflows'> &
  FlatFields & {
    workerId?: string;
    logDir?: string;
    inputs?: { dir: string; omitted: { path: string; reason: string }[] };
  };

/** state.json's `inputs.dir` of a pool attempt until its worker says where it copied them. */
export const INPUTS_ON_WORKER = "(on the pool worker: its VERDICT_HOME's runs/<run_id>/tasks/<key>/inputs)";

/** Fields of the worker's record that become the attempt's; the rest (who, what, which attempt) stays the orchestrator's. */
const TAKEN: (keyof AttemptRecord)[] = [
  'host',
  'harness',
  'model',
  'accessPlan',
  'reasoningEffort',
  'sandbox',
  'startedAt',
  'steps',
  'workerPid',
  'workerStartTime',
  'worker',
  'usage',
  'seal',
  'check',
  'verdict',
  'reason',
  'costMicroUsd',
  'commit',
  'sealed',
  'reviews',
  'suite',
];

/**
 * Sends a run's attempts to the pool. One per run: `start()` before the run, `step()` as the run's only step,
 * `close()` after it.
 */
export class PoolDispatcher {
  private readonly db: pg.Pool;
  private readonly boss: PgBoss;
  private readonly queues = new Set<string>();
  private baseRef: Promise<void> | null = null;
  /** Since when (epoch ms) every query of ours has succeeded; null while the database is unreachable. */
  private healthySince: number | null = null;
  private readonly lease: number;
  private readonly trust: PoolTrust;

  constructor(
    readonly target: PoolTarget,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.trust = target.trust ?? 'check';
    this.db = poolDb(target.url);
    this.boss = new PgBoss({ connectionString: target.url, schedule: false, max: 4 });
    this.boss.on('error', () => undefined);
    this.lease = leaseMs(env);
  }

  /**
   * Creates the pool's tables and pg-boss's schema when missing.
   * @throws Error when the database cannot be reached (nothing of the run is started then)
   */
  async start(): Promise<void> {
    await ensurePoolSchema(this.db);
    await withPoolSetupLock(this.db, () => this.boss.start());
    this.healthySince = Date.now();
  }

  /** Stops the queue's connections. */
  async close(): Promise<void> {
    await this.boss.stop({ graceful: false, wait: true }).catch(() => undefined);
    await this.db.end().catch(() => undefined);
  }

  /** The step that runs an attempt on the pool (named `work`: it is the work, seal, check and deliver of a worker). */
  step(): Step {
    return { name: 'work', phase: 'running', when: (rec) => rec.verdict === null, run: (ctx, task, rec, io) => this.runRemote(ctx, task, rec, io) };
  }

  /**
   * Runs the attempt on the pool. Cancelled while the database cannot be reached (see untilDone), it does not wait
   * for the database: the attempt is recorded INTERRUPTED (resumable), since a worker may still be running it.
   */
  private async runRemote(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, io: AttemptIo): Promise<Judgement> {
    // Every row of a pool attempt says the trust in force; the worker and the re-check are filled in as they are known.
    rec.pool = { worker: null, trust: this.trust, recheck: null };
    try {
      return await this.dispatch(ctx, task, rec, io);
    } catch (e) {
      if (e instanceof Cancelled || !task.abort.signal.aborted) throw e;
      const ref = `refs/verdict/${ctx.runId}/${task.spec.key}/${rec.attempt}`;
      return {
        verdict: 'INTERRUPTED',
        reason: `the run was cancelled while ${e instanceof PoolUnreachable ? e.message : `the pool's database could not be reached (${(e as Error).message})`}: whether a pool worker still runs attempt ${rec.attempt} is unknown; a result it reports stays in the pool's database (verdict_pool_attempts) and its sealed commit on the remote as ${ref}; \`verdict resume ${ctx.runId}\` runs the task again`,
      };
    }
  }

  /**
   * Sends the attempt to its engine's queue: the run's base commit (once per run), the task's inputs and the start
   * commits to the remote, the attempt's row in verdict_pool_attempts and the job, both idempotent on run, task and
   * attempt (job id derived from them).
   * @returns the payload, its queue and its job id
   */
  private async send(
    ctx: AttemptContext,
    task: TaskRuntime,
    rec: AttemptRecord,
    io: AttemptIo,
    repo: NonNullable<AttemptContext['repo']>,
  ): Promise<{ job: AttemptJob; queue: string; jobId: string }> {
    await (this.baseRef ??= retrying(() => push(repo.root, this.target.remote, repo.baseSha, `refs/verdict/${ctx.runId}/base`)));
    const inputs = task.spec.inputs ? await this.sendInputs(ctx, task, io) : null;
    const job = jobOf(ctx, task, rec, this.target.remote, inputs, await poolPartsOf(ctx, task));
    // A prerequisite's commit may be on no ref of its own key there (a best-of-N group's is its winner's): it goes
    // to the remote under a ref named after the commit, which the worker fetches.
    for (const p of job.startFrom) await retrying(() => push(repo.root, this.target.remote, p.commit, sealedRef(job.runId, p.commit), true));
    const queue = queueOf(job.engine);
    await this.ensureQueue(queue, task);
    const jobId = uuidOf(`${job.runId}/${job.key}/${job.attempt}`);
    // Idempotent on run/task/attempt: a repeated send (after an outage hid whether the first one landed) adds nothing.
    await this.query(
      `INSERT INTO verdict_pool_attempts (run_id, task_key, attempt, engine, queue, job_id) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [job.runId, job.key, job.attempt, job.engine, queue, jobId],
      task,
    );
    await this.untilDone(
      () =>
        this.boss.send(queue, job, {
          id: jobId,
          retryLimit: QUEUE_RETRIES,
          expireInSeconds: Math.ceil((job.timeoutMs + job.checkTimeoutMs) / 1000) + EXPIRY_MARGIN_S,
        }),
      task,
    );
    return { job, queue, jobId };
  }

  private async dispatch(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, io: AttemptIo): Promise<Judgement> {
    if (!ctx.repo) throw new Error('a pool run needs worktree mode (a git repository and a remote)');
    const { job, queue, jobId } = await this.send(ctx, task, rec, io, ctx.repo);
    ctx.emit({ type: 'task-note', key: job.key, note: `attempt ${job.attempt} queued on ${queue}` });

    let host: string | null = null;
    let cancelSent = false;
    /** When (local ms) the job was first seen taken from the queue while no worker had claimed its row. */
    let orphanSince: number | null = null;
    for (;;) {
      const row = await this.poll(job, task);
      if (row) {
        if (row.record) return this.settleFrom(ctx, task, rec, io, job, row.record, row.log_tail ?? '', row.log_dir, row.worker_id);
        // What it has spent so far on the worker counts against the budgets now: past one, the attempt is stopped.
        const spent = parseJobSpend(row.spend);
        if (spent) ctx.spend.remoteProgress(task.spec.key, spent, job.engine);
        if (row.host && row.host !== host) {
          host = row.host;
          rec.host = host;
          io.sync();
          ctx.emit({ type: 'task-note', key: job.key, note: `attempt ${job.attempt} runs on ${host}` });
        }
        if (task.abort.signal.aborted && !cancelSent) {
          cancelSent = true;
          await this.query(
            `UPDATE verdict_pool_attempts SET cancel_requested = true WHERE run_id = $1 AND task_key = $2 AND attempt = $3`,
            [job.runId, job.key, job.attempt],
            null,
          ).catch(() => undefined);
          if (!row.worker_id) {
            // Not claimed yet: withdrawn from the queue and settled here.
            await this.boss.cancel(queue, jobId).catch(() => undefined);
            if (await this.settleHere(job, { verdict: 'CANCELLED', reason: 'the run was cancelled' })) throw new Cancelled();
          }
        }
        if (!row.worker_id && Number(row.waiting_ms) > this.lease) {
          // Taken from the queue by a worker that never claimed the row (it died, or the database went away, between
          // the two): after a lease the job is failed back to the queue, and pg-boss's retry hands it out again.
          const state = (await this.boss.getJobById(queue, jobId).catch(() => null))?.state;
          if (state === 'failed') {
            const reason = `the queue gave the attempt up: taken ${QUEUE_RETRIES + 1} times and never claimed by a worker`;
            if (await this.settleHere(job, { verdict: 'ERROR', reason })) return { verdict: 'ERROR', reason };
          }
          if (state !== 'active') orphanSince = null;
          else if (orphanSince === null) orphanSince = Date.now();
          else if (Date.now() - orphanSince > this.lease) {
            await this.boss.fail(queue, jobId, { reason: 'taken from the queue but never claimed' }).catch(() => undefined);
            ctx.emit({ type: 'task-note', key: job.key, note: `attempt ${job.attempt} was taken from the queue but no worker claimed it: queued again` });
            orphanSince = null;
          }
        }
        const lost = row.worker_id && row.lost && this.healthySince !== null && Date.now() - this.healthySince >= this.lease;
        if (lost) {
          const reason = `the pool worker ${row.worker_id} (host ${row.host}) stopped renewing its heartbeat for ${Math.round(this.lease / 1000)} s while running this attempt; it runs again elsewhere`;
          if (await this.settleHere(job, { verdict: 'INTERRUPTED', reason, host: row.host ?? rec.host })) {
            await this.boss.cancel(queue, jobId).catch(() => undefined);
            rec.lostWorker = row.worker_id ?? undefined;
            return { verdict: 'INTERRUPTED', reason };
          }
        }
      }
      await sleep(DISPATCH_POLL_MS);
    }
  }

  /**
   * A task with `inputs`: resolves them here (names drawn and kept in state.json, as on a local run), pushes each
   * sealed commit to the remote (payload.ts sealedRef) for the worker to fetch, and records them in the task's state
   * (the keys behind the names stay here). Returns the payload's `inputs`: names and commits only.
   * @throws Error naming a prerequisite that did not pass, or git's error when a commit cannot be pushed
   */
  private async sendInputs(ctx: AttemptContext, task: TaskRuntime, io: { sync: () => void }): Promise<JobInputs> {
    const { placed, excluded } = resolveInputs(ctx, task);
    const commits = [...new Set(placed.map((p) => p.commit as string))];
    for (const c of commits) await retrying(() => push(ctx.repo!.root, this.target.remote, c, sealedRef(ctx.runId, c), true));
    task.state.inputs = {
      dir: INPUTS_ON_WORKER,
      entries: placed.map((p) => ({ name: p.name, path: p.rel, key: p.key, member: p.member, source: p.commit as string })),
      excluded,
      omitted: [],
    };
    io.sync();
    return { anonymous: task.spec.inputs!.anonymous, entries: placed.map((p) => ({ path: p.rel, commit: p.commit as string })) };
  }

  /** Settles the attempt's row from here (the first settlement wins); true when this one did. */
  private async settleHere(job: AttemptJob, record: { verdict: string; reason: string; host?: string }): Promise<boolean> {
    const r = await this.query(
      `UPDATE verdict_pool_attempts SET record = $4, finished_at = now() WHERE run_id = $1 AND task_key = $2 AND attempt = $3 AND record IS NULL RETURNING attempt`,
      [job.runId, job.key, job.attempt, JSON.stringify({ ...record, settledBy: 'orchestrator' })],
      null,
    );
    return (r?.rowCount ?? 0) > 0;
  }

  /** The attempt's row joined with its worker's heartbeat, or null when the database did not answer. */
  private async poll(job: AttemptJob, task: TaskRuntime): Promise<PollRow | null> {
    const r = await this.query(
      `SELECT a.record, a.worker_id, a.host, a.log_tail, a.log_dir, a.spend, extract(epoch from (now() - a.enqueued_at)) * 1000 AS waiting_ms, (w.heartbeat_at IS NULL OR w.heartbeat_at < now() - ($4::double precision * interval '1 millisecond')) AS lost
       FROM verdict_pool_attempts a LEFT JOIN verdict_pool_workers w ON w.worker_id = a.worker_id
       WHERE a.run_id = $1 AND a.task_key = $2 AND a.attempt = $3`,
      [job.runId, job.key, job.attempt, this.lease],
      task,
    );
    return (r?.rows[0] as PollRow | undefined) ?? null;
  }

  /**
   * Copies the worker's record into the attempt and judges it. A PASS counts only once its commit is here: fetched
   * from the remote's attempt ref and matching the record, and (trust `check`) its check re-run here on that commit
   * and passed (pool/recheck.ts; a failure there is a FAIL with both outputs, counted against the worker in
   * verdict_pool_mismatches); the task branch is then set here and on the remote.
   */
  private async settleFrom(
    ctx: AttemptContext,
    task: TaskRuntime,
    rec: AttemptRecord,
    io: AttemptIo,
    job: AttemptJob,
    remote: RemoteRecord & { settledBy?: string },
    tail: string,
    logDir: string | null,
    claimedBy: string | null,
  ): Promise<Judgement> {
    if (remote.settledBy === 'orchestrator') {
      // Settled here before a worker's result arrived (cancelled before it was claimed, or its worker was lost).
      if (remote.verdict === 'CANCELLED') throw new Cancelled();
      return { verdict: remote.verdict ?? 'ERROR', reason: remote.reason };
    }
    this.keepWorkerRecord(ctx, task, rec, io, remote, tail, logDir, claimedBy);
    const verdict = remote.verdict ?? 'ERROR';
    if (verdict === 'PASS' && this.trust === 'check' && !rec.commit) {
      return {
        verdict: 'ERROR',
        reason: `the worker on ${rec.host} reported a PASS but no commit, so there is nothing to re-check here and it is not counted`,
      };
    }
    if (verdict === 'PASS' && rec.commit && task.state.branch && ctx.repo) {
      const ref = `refs/verdict/${ctx.runId}/${task.spec.key}/${rec.attempt}`;
      try {
        const git = gitFor(ctx.repo.root);
        await retrying(() => git.raw(['fetch', '--no-tags', '--quiet', this.target.remote, `+${ref}:${ref}`]));
        const got = (await git.revparse([ref])).trim();
        if (got !== rec.commit) throw new Error(`${ref} on the remote is ${got}, not the recorded ${rec.commit}`);
      } catch (e) {
        rec.commit = null;
        return {
          verdict: 'ERROR',
          reason: `the worker on ${rec.host} reported a PASS, but its commit could not be taken from the remote, so the work is not counted: ${(e as Error).message}`,
        };
      }
      if (this.trust === 'check') {
        const judged = await this.recheck(ctx, task, rec, io, job);
        if (judged) return judged;
      }
      try {
        const git = gitFor(ctx.repo.root);
        await git.raw(['update-ref', `refs/heads/${task.state.branch}`, rec.commit]);
        await retrying(() => push(ctx.repo!.root, this.target.remote, rec.commit!, `refs/heads/${task.state.branch}`, true));
        task.state.commit = rec.commit;
      } catch (e) {
        rec.commit = null;
        return {
          verdict: 'ERROR',
          reason: `the worker on ${rec.host} reported a PASS and its check passed here, but its commit could not be set on the task branch: ${(e as Error).message}`,
        };
      }
    }
    return { verdict, reason: remote.reason };
  }

  /**
   * Copies what the worker's record holds into the attempt's (TAKEN fields; the worker that claimed the row, not the
   * one the record names; no per-token cost for a subscription login's engine) and writes its logs here: the tail kept
   * in Postgres as worker.log, the check's output, each workflow's share (Workflow.pool taken), and pool.json saying where the full logs are.
   */
  private keepWorkerRecord(
    ctx: AttemptContext,
    task: TaskRuntime,
    rec: AttemptRecord,
    io: AttemptIo,
    remote: RemoteRecord,
    tail: string,
    logDir: string | null,
    claimedBy: string | null,
  ): void {
    // The worker that claimed the attempt's row, not the one its record names (a record is the worker's own word).
    rec.pool = { worker: claimedBy ?? (typeof remote.workerId === 'string' ? remote.workerId : null), trust: this.trust, recheck: null };
    // What the worker's record holds (a worker that could not run the attempt sends only its verdict and reason).
    for (const f of TAKEN)
      if ((remote as unknown as Record<string, unknown>)[f] !== undefined)
        (rec as unknown as Record<string, unknown>)[f] = (remote as unknown as Record<string, unknown>)[f];
    // An engine of this run's subscription logins pays nothing per token, whatever cost the worker's engine reported.
    if (ctx.spend.billingOf(rec.engine).billing) {
      rec.costMicroUsd = null;
      rec.billing = 'subscription';
    }
    io.workerTail = tail;
    const files = recordFiles(rec);
    fs.writeFileSync(files.worker, tail);
    if (rec.check) fs.writeFileSync(files.check, rec.check.output);
    poolRecordTaken(remote, rec);
    fs.writeFileSync(
      path.join(rec.dir, 'pool.json'),
      JSON.stringify(
        {
          host: remote.host,
          worker: remote.workerId ?? null,
          logs: logDir,
          note: 'worker.log here is the tail kept in Postgres; the full logs are in `logs` on `host`',
        },
        null,
        2,
      ),
    );
    // Where the worker copied the inputs and what it left out (size caps, special files): its own record of them.
    if (task.state.inputs && remote.inputs)
      task.state.inputs = { ...task.state.inputs, dir: `${remote.host ?? 'the worker'}:${remote.inputs.dir}`, omitted: remote.inputs.omitted };
  }

  /**
   * Re-runs the check of a reported PASS here (pool/recheck.ts). Returns null when it passed (the PASS counts; the
   * record's check is this run's, the worker's output kept in worker-check.log); otherwise the attempt's judgement:
   * FAIL with both outputs when it failed here (and the worker's mismatch recorded), ERROR when it could not run.
   * @throws Cancelled when the task was stopped meanwhile
   */
  private async recheck(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, io: AttemptIo, job: AttemptJob): Promise<Judgement | null> {
    const commit = rec.commit as string;
    const reported = rec.check;
    const files = recordFiles(rec);
    fs.writeFileSync(files.workerCheck, reported?.output ?? '');
    ctx.emit({
      type: 'task-note',
      key: task.spec.key,
      note: `attempt ${rec.attempt}: ${rec.host} reported PASS for ${commit.slice(0, 10)}; its check runs again here`,
    });
    const here = await recheckHere(ctx, task, rec, io, job);
    const pool = rec.pool as NonNullable<AttemptRecord['pool']>;
    if (!here.ran) {
      rec.commit = null;
      return {
        verdict: 'ERROR',
        reason: `the worker on ${rec.host} reported PASS for ${commit.slice(0, 10)}, but its check could not be re-run here, so it is not counted: ${here.reason} (the config's "pool": {"trust": "worker"} takes workers' PASSes as reported)`,
      };
    }
    pool.recheck = { passed: here.passed, exitCode: here.exitCode };
    rec.check = { receipt: here.receipt, output: here.output, exitCode: here.exitCode };
    if (here.passed) return null;
    pool.workerCheckOutput = reported?.output ?? '';
    rec.commit = null;
    const worker = pool.worker ?? 'unknown';
    await this.query(
      `INSERT INTO verdict_pool_mismatches (run_id, task_key, attempt, worker_id, host, commit_sha, worker_exit, recheck_exit) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
      [job.runId, job.key, job.attempt, worker, rec.host, commit, reported?.exitCode ?? null, here.exitCode],
      task,
    );
    const said = (reported?.output ?? '').trim().split('\n').filter(Boolean).slice(-1)[0] ?? '';
    return {
      verdict: 'FAIL',
      reason: `the pool worker ${worker} on ${rec.host} reported PASS for ${commit.slice(0, 10)}, but the check re-run here on that commit failed: ${here.reason}; the worker's check output said ${JSON.stringify(said.slice(0, 200))} (worker-check.log), this one is check.log`,
    };
  }

  private async ensureQueue(queue: string, task: TaskRuntime): Promise<void> {
    if (this.queues.has(queue)) return;
    await this.untilDone(() => withPoolSetupLock(this.db, () => ensureQueue(this.boss, queue)), task);
    this.queues.add(queue);
  }

  /** A query that waits out an outage (see untilDone; `null`: once). */
  private async query(sql: string, params: unknown[], task: TaskRuntime | null): Promise<pg.QueryResult | null> {
    return this.untilDone(() => this.db.query(sql, params), task);
  }

  /**
   * `fn` until it succeeds, every second (`task` null: once). An outage delays work and loses none; but once the
   * task is stopped (the run cancelled) an outage is waited out for CANCEL_GRACE_MS at most.
   * @throws PoolUnreachable when it is still failing CANCEL_GRACE_MS after the task was stopped; `fn`'s error when `task` is null
   */
  private async untilDone<T>(fn: () => Promise<T>, task: TaskRuntime | null): Promise<T> {
    let failingSince: number | null = null;
    for (;;) {
      try {
        const r = await fn();
        this.healthySince ??= Date.now();
        return r;
      } catch (e) {
        this.healthySince = null;
        if (!task) throw e;
        if (task.abort.signal.aborted) {
          failingSince ??= Date.now();
          if (Date.now() - failingSince >= CANCEL_GRACE_MS) throw new PoolUnreachable((e as Error).message || String(e));
        }
        await sleep(1000);
      }
    }
  }
}

interface PollRow {
  record: (RemoteRecord & { settledBy?: string }) | null;
  worker_id: string | null;
  host: string | null;
  log_tail: string | null;
  log_dir: string | null;
  /** What the attempt has spent so far, as its worker wrote it (payload.ts JobSpend; read with parseJobSpend). */
  spend: unknown;
  /** ms since the attempt was enqueued (the database's clock). */
  waiting_ms: string | number;
  lost: boolean;
}

/**
 * The payload of an attempt: the task as the manifest states it, nothing of this machine's environment; `inputs` its
 * resolved inputs, `workflows` the workflows' parts (run/workflows/index.ts poolPartsOf).
 */
export function jobOf(
  ctx: AttemptContext,
  task: TaskRuntime,
  rec: AttemptRecord,
  remote: string,
  inputs: JobInputs | null = null,
  workflows: Record<string, unknown> = {},
): AttemptJob {
  const { spec } = task;
  return {
    v: JOB_VERSION,
    runId: ctx.runId,
    runName: ctx.opts.manifest.runName,
    identity: ctx.opts.identity,
    key: spec.key,
    attempt: rec.attempt,
    retry: rec.retry,
    engine: task.state.engine,
    model: task.state.model,
    taskType: spec.taskType,
    spec: spec.spec,
    failure: task.failure,
    check: spec.check,
    expectFiles: spec.expectFiles,
    timeoutMs: spec.timeoutMs,
    checkTimeoutMs: spec.checkTimeoutMs,
    watchdogMs: spec.watchdogMs,
    // A fallback attempt runs on another engine, without the first engine's arguments (as a local run does).
    engineArgs: task.state.engine === spec.engine ? spec.engineArgs : [],
    verified: spec.verified,
    network: spec.network,
    protect: spec.protect,
    setup: ctx.opts.manifest.setup,
    remote,
    baseSha: ctx.repo!.baseSha,
    branch: task.state.branch!,
    // A workflow may start it elsewhere (a critique's revision, from the proposal, as it goes on in the same dir locally).
    startFrom: poolStartFrom(task) ?? task.startFrom.map((p) => ({ key: p.key, commit: p.commit })),
    group: spec.group ?? null,
    candidate: spec.candidate ?? null,
    review: spec.review,
    guard: spec.guard,
    allowDeps: spec.allowDeps,
    allowPaths: spec.allowPaths,
    inputs,
    workflows,
    ...(ctx.opts.manifest.hide?.length ? { hide: ctx.opts.manifest.hide } : {}),
    ...(spec.suite ? { suite: { command: spec.suite.command, timeoutMs: spec.suite.timeoutMs } } : {}),
  };
}

/** `git push` of `sha` to `ref` on `remote` (forced: a task branch may be rerun from its start point). */
export async function push(root: string, remote: string, sha: string, ref: string, force = false): Promise<void> {
  await gitFor(root).raw(['push', '--quiet', remote, `${force ? '+' : ''}${sha}:${ref}`]);
}

/** Creates pg-boss queue `queue` unless it exists (another process may create it at the same time). */
export async function ensureQueue(boss: PgBoss, queue: string): Promise<void> {
  if (await boss.getQueue(queue)) return;
  await boss.createQueue(queue).catch(async (e) => {
    if (!(await boss.getQueue(queue))) throw e;
  });
}

/** A job id pg-boss accepts (a UUID), derived from run/task/attempt so a repeated send is the same job. */
export function uuidOf(name: string): string {
  const h = crypto.createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Runs `fn` until it succeeds, 5 tries, 1 s apart (git and the queue across a short outage). */
async function retrying<T>(fn: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= tries) throw e;
      await sleep(1000);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
