// The worker pool as every view shows it — `verdict pool status`, the dashboard and the runs tree — built by one
// pure function from what the pool's database says (extension/core/pool/status.ts reads it). Pure; no Node, no DOM.

/** A worker's state: `live`, `draining` (Ctrl-C: finishing what it holds), `stopped` (drained and ended), `lost` (silent longer than the lease). */
export type PoolWorkerState = 'live' | 'draining' | 'stopped' | 'lost';

/** One worker as its heartbeat row says. Times epoch ms (the database's clock). */
export interface PoolWorkerStatus {
  workerId: string;
  host: string;
  pid: number;
  slots: number;
  engines: string[];
  startedAt: number;
  heartbeatAt: number;
  /** ms since its last heartbeat, by the database's clock, when read. */
  silentMs: number;
  state: PoolWorkerState;
  /** The attempts it holds: `run/task/attempt` (run ids and task keys never contain `/`). */
  running: string[];
  /**
   * Attempts it reported PASS for whose check failed when the orchestrator re-ran it on the reported commit
   * (table verdict_pool_mismatches; docs/scale.md "Trust"): a worker that lies, or whose machine differs.
   */
  mismatches: number;
}

/** The pool as its database says (the JSON of `verdict pool status --json`). */
export interface PoolStatus {
  workers: PoolWorkerStatus[];
  /** Per engine: attempts enqueued and not yet claimed (`waiting`), and claimed but not settled (`running`). */
  queues: { engine: string; waiting: number; running: number }[];
}

/** One attempt a worker holds. */
export interface PoolAttemptRef {
  runId: string;
  taskKey: string;
  attempt: number;
}

/** One worker as a view shows it. */
export interface PoolWorkerView extends Omit<PoolWorkerStatus, 'running'> {
  running: PoolAttemptRef[];
  /** Slots it is not using (0 when it holds more than it has, which a view shows as full). */
  freeSlots: number;
  /** Its state, slots, engines and heartbeat: `live  slots 1/2  engines codex,script  heartbeat 0.4 s ago`. */
  detail: string;
  /** `host  ` + detail. */
  line: string;
}

/**
 * The pool for a view. `url` has its password hidden. `error`: why the database could not be read at `readAt`
 * (then `workers` and `queues` are empty: a view shows nothing it cannot vouch for).
 */
export interface PoolView {
  url: string;
  readAt: number;
  error: string | null;
  workers: PoolWorkerView[];
  queues: PoolStatus['queues'];
  totals: { workers: number; live: number; slots: number; busy: number; waiting: number };
}

/** `run/task/attempt` → its parts; null when it is not one. */
export function parseAttemptRef(ref: string): PoolAttemptRef | null {
  const m = /^([^/]+)\/([^/]+)\/(\d+)$/.exec(ref);
  return m ? { runId: m[1]!, taskKey: m[2]!, attempt: Number(m[3]) } : null;
}

/** Seconds, one decimal under a minute, then minutes / hours: `0.4 s`, `12.0 s`, `3 min`, `2 h`. */
export function ageText(ms: number): string {
  if (ms < 60_000) return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min`;
  return `${Math.floor(ms / 3_600_000)} h`;
}

/**
 * One worker's detail (PoolWorkerView.detail): everything but its host; ends with `  1 PASS that did not hold here`
 * (or `N PASSes …`) when the orchestrator's re-check found any.
 */
export function workerDetail(w: Pick<PoolWorkerStatus, 'state' | 'slots' | 'engines' | 'silentMs'> & { mismatches?: number }, busy: number): string {
  const m = w.mismatches ?? 0;
  return `${w.state}  slots ${busy}/${w.slots}  engines ${w.engines.join(',') || '(none)'}  heartbeat ${ageText(w.silentMs)} ago${m ? `  ${m} ${m === 1 ? 'PASS' : 'PASSes'} that did not hold here` : ''}`;
}

/**
 * The one model of the pool for every view: the status read at `readAt` (null when it could not be read: `error`
 * says why), with each worker's attempts parsed, its free slots and its line, and the totals. Busy slots and the
 * live count cover only live and draining workers (a lost worker's attempts are about to run elsewhere).
 */
export function poolView(status: PoolStatus | null, at: { url: string; readAt: number; error?: string | null }): PoolView {
  const workers = (status?.workers ?? []).map((w): PoolWorkerView => {
    const running = w.running.map(parseAttemptRef).filter((r): r is PoolAttemptRef => r !== null);
    const detail = workerDetail(w, running.length);
    return { ...w, running, freeSlots: Math.max(0, w.slots - running.length), detail, line: `${w.host}  ${detail}` };
  });
  const active = workers.filter((w) => w.state === 'live' || w.state === 'draining');
  const queues = status?.queues ?? [];
  return {
    url: at.url,
    readAt: at.readAt,
    error: at.error ?? null,
    workers,
    queues,
    totals: {
      workers: workers.length,
      live: workers.filter((w) => w.state === 'live').length,
      slots: active.reduce((n, w) => n + w.slots, 0),
      busy: active.reduce((n, w) => n + w.running.length, 0),
      waiting: queues.reduce((n, q) => n + q.waiting, 0),
    },
  };
}

/** The pool in one line: `2 workers (2 live), 3/4 slots busy, 1 waiting`, or the error. */
export function poolSummary(v: PoolView): string {
  if (v.error) return `cannot read the pool: ${v.error}`;
  const t = v.totals;
  return `${t.workers} worker${t.workers === 1 ? '' : 's'} (${t.live} live), ${t.busy}/${t.slots} slots busy, ${t.waiting} waiting`;
}

/** The pool as lines for a terminal (`verdict pool status`): the summary, each worker with what it runs, the queues. */
export function poolLines(v: PoolView): string[] {
  const lines = [poolSummary(v)];
  for (const w of v.workers) {
    lines.push(`  ${w.line}  (${w.workerId})`);
    for (const r of w.running) lines.push(`    runs ${r.runId}/${r.taskKey}/${r.attempt}`);
  }
  for (const q of v.queues) lines.push(`queue ${q.engine}: ${q.waiting} waiting, ${q.running} running`);
  return lines;
}
