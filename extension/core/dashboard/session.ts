import path from 'node:path';
import {
  OUTPUT_RING_BYTES,
  PATCH_INTERVAL_MS,
  type HostToPage,
  type OutputChunk,
  type PageToHost,
  type ReviewerRow,
  type ScoreRow,
} from '../../../schemas/protocol';
import type { DashboardActions, DashboardRunActions } from './actions';
import { loadArtifact } from './artifacts';
import { LogTail } from './log-tail';
import type { DashboardLog, DashboardSource, RunPatch } from './source';
import { parsePageMessage } from './validate';

/** Most bytes of worker output one session sends per tick, over all workers (a flood is spread over ticks). */
export const MAX_TICK_OUTPUT_BYTES = 256 * 1024;

/** How a session reaches its page. */
export interface PageTransport {
  /** Sends one message. */
  post(message: HostToPage): void;
  /** True while the page has not taken earlier messages (a slow socket): output is held back, never queued up. */
  busy?(): boolean;
}

/** Where the scoreboard rows come from: the rows (and the reviewers' rows, none when absent) and the name of the module that made them. */
export type ScoreboardProvider = () => Promise<{ rows: ScoreRow[]; reviews?: ReviewerRow[]; source: string; quarantined?: number }>;

/**
 * One page (a webview panel or a browser tab) talking to its host. Validates every message the page sends
 * (malformed or unknown: logged, answered with did-reject, never acted on); posts nothing before `ready`; then a
 * snapshot, run patches coalesced per run, and the output of the selected run's workers read from their worker.log
 * files with bounded reads — at most one flush every PATCH_INTERVAL_MS (one did-append-output for all workers), at
 * most OUTPUT_RING_BYTES per worker and MAX_TICK_OUTPUT_BYTES in all per flush. Dispose with `dispose()`.
 */
export class DashboardSession {
  private ready = false;
  private unsubscribe: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private pendingRuns = new Map<string, RunPatch>();
  private pendingSkipped: RunPatch | null = null;
  private pendingPool: RunPatch | null = null;
  private pendingSlots: RunPatch | null = null;
  private selected: string | null = null;
  /** Tails of the selected run's workers, by `key#attempt`; `done` once read after the attempt ended. */
  private tails = new Map<string, { tail: LogTail; key: string; attempt: number; done: boolean }>();
  private rotate = 0;
  private pendingView: 'live' | 'library' | 'scoreboard' | null = null;

  constructor(
    private readonly source: DashboardSource,
    private readonly transport: PageTransport,
    /** `actions` / `runActions`: what the host does for `task-action` / `run-action` (absent: every one is refused). */
    private readonly opts: {
      host: 'vscode' | 'browser';
      log: DashboardLog;
      scoreboard: ScoreboardProvider;
      actions?: DashboardActions;
      runActions?: DashboardRunActions;
      name?: string;
    },
  ) {}

  /** Handles one message from the page, after validating it. Returns false when it was rejected. */
  receive(raw: unknown): boolean {
    const parsed = parsePageMessage(raw);
    if (!parsed.ok) return this.reject(parsed.reason);
    return this.handle(parsed.message);
  }

  /** Logs and answers a message that will not be acted on. Returns false. */
  reject(reason: string): false {
    this.opts.log.warn(`dashboard${this.opts.name ? ` ${this.opts.name}` : ''}: rejected a message from the page: ${reason}`);
    if (this.ready) this.transport.post({ type: 'did-reject', reason });
    return false;
  }

  /** Asks the page to show a view (after `ready`; before it, the view is shown once the page is ready). */
  show(view: 'live' | 'library' | 'scoreboard'): void {
    if (this.ready) this.transport.post({ type: 'show-view', view });
    else this.pendingView = view;
  }

  /** Stops the timer and the subscription. */
  dispose(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Acts on one validated page message (anything but `ready` before `ready` is rejected). Returns false when rejected. */
  private handle(m: PageToHost): boolean {
    if (m.type !== 'ready' && !this.ready) return this.reject(`"${m.type}" before "ready"`);
    switch (m.type) {
      case 'ready':
        this.onReady();
        return true;
      case 'select-run':
        this.selected = m.runId;
        this.tails.clear();
        this.tick();
        return true;
      case 'load-artifact':
        this.sendArtifact(m);
        return true;
      case 'load-scoreboard':
        this.sendScoreboard(m);
        return true;
      case 'task-action':
        this.taskAction(m);
        return true;
      case 'run-action':
        this.runAction(m);
        return true;
      default: {
        const never: never = m;
        return this.reject(`unhandled ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * The page said ready: subscribes (once), posts a fresh snapshot, starts the flush timer (once) and shows a view asked
   * for before. A page reload in the same panel says ready again: everything per-page starts over.
   */
  private onReady(): void {
    this.ready = true;
    this.selected = null;
    this.tails.clear();
    this.pendingRuns.clear();
    this.pendingSkipped = null;
    this.pendingPool = null;
    this.pendingSlots = null;
    this.unsubscribe ??= this.source.subscribe((p) => this.queue(p));
    this.transport.post({ type: 'snapshot', ...this.source.snapshot(), home: this.source.home, host: this.opts.host });
    this.timer ??= setInterval(() => this.tick(), PATCH_INTERVAL_MS);
    if (this.pendingView) this.transport.post({ type: 'show-view', view: this.pendingView });
    this.pendingView = null;
  }

  /** A page's request for one artifact of a run: read with loadArtifact's bounds, answered with did-load-artifact. */
  private sendArtifact(m: Extract<PageToHost, { type: 'load-artifact' }>): void {
    const r = loadArtifact(this.source.home, this.source.run(m.runId), m);
    this.transport.post({
      type: 'did-load-artifact',
      replyTo: m.seq,
      runId: m.runId,
      artifact: m.artifact,
      key: m.key ?? null,
      attempt: m.attempt ?? null,
      ...r,
    });
  }

  /** A page's request for the scoreboard: answered with did-load-scoreboard, its `error` set (and no rows) when the provider throws. */
  private sendScoreboard(m: Extract<PageToHost, { type: 'load-scoreboard' }>): void {
    this.opts.scoreboard().then(
      ({ rows, reviews, source, quarantined }) =>
        this.transport.post({
          type: 'did-load-scoreboard',
          replyTo: m.seq,
          rows,
          reviews: reviews ?? [],
          source,
          quarantined: quarantined ?? 0,
          error: null,
        }),
      (e: Error) => this.transport.post({ type: 'did-load-scoreboard', replyTo: m.seq, rows: [], reviews: [], source: '', quarantined: 0, error: e.message }),
    );
  }

  /**
   * A page's action on one task of a run: refused when the run has no such task or the host does not act on tasks,
   * else handed to the host's task actions; answered with did-act (a failure: refused, with its message's first line).
   */
  private taskAction(m: Extract<PageToHost, { type: 'task-action' }>): void {
    const reply = (result: 'done' | 'refused' | 'sent', message: string) =>
      this.transport.post({ type: 'did-act', replyTo: m.seq, runId: m.runId, key: m.key, action: m.action, result, message });
    const info = this.source.run(m.runId);
    if (!info || !info.state.tasks.some((t) => t.key === m.key)) return reply('refused', `no task ${m.key} in run ${m.runId}`);
    if (!this.opts.actions) return reply('refused', 'this dashboard host does not act on tasks');
    this.opts.log.info(`dashboard${this.opts.name ? ` ${this.opts.name}` : ''}: ${m.action} ${m.key} of run ${m.runId} asked by the page`);
    this.opts.actions(m.action, info, m.key).then(
      (r) => {
        this.opts.log.info(`dashboard: ${m.action} ${m.key} of run ${m.runId}: ${r.result} — ${r.message}`);
        reply(r.result, r.message);
      },
      (e: Error) => {
        this.opts.log.warn(`dashboard: ${m.action} ${m.key} of run ${m.runId} failed: ${e.message}`);
        reply('refused', e.message.split('\n')[0] ?? String(e));
      },
    );
  }

  /** A page's pause, resume or drain of a run: handed to the host's run actions, answered with did-run-act. */
  private runAction(m: Extract<PageToHost, { type: 'run-action' }>): void {
    const reply = (result: 'done' | 'refused' | 'sent', message: string) =>
      this.transport.post({ type: 'did-run-act', replyTo: m.seq, runId: m.runId, action: m.action, result, message });
    const info = this.source.run(m.runId);
    if (!info) return reply('refused', `no run ${m.runId}`);
    const act = this.opts.runActions;
    if (!act) return reply('refused', 'this dashboard host does not act on runs');
    const who = `dashboard${this.opts.name ? ` ${this.opts.name}` : ''}`;
    this.opts.log.info(`${who}: ${m.action} of run ${m.runId} asked by the page`);
    act(m.action, info).then(
      (r) => {
        this.opts.log.info(`${who}: ${m.action} of run ${m.runId}: ${r.result} — ${r.message}`);
        reply(r.result, r.message);
      },
      (e: Error) => {
        this.opts.log.warn(`${who}: ${m.action} of run ${m.runId} failed: ${e.message}`);
        reply('refused', e.message.split('\n')[0] ?? String(e));
      },
    );
  }

  private queue(p: RunPatch): void {
    if (p.type === 'did-change-skipped') this.pendingSkipped = p;
    else if (p.type === 'did-change-pool') this.pendingPool = p;
    else if (p.type === 'did-change-slots') this.pendingSlots = p;
    else this.pendingRuns.set(p.type === 'did-change-run' ? p.run.runId : p.runId, p);
  }

  /** One flush: coalesced run patches, then new worker output within the byte budget. */
  private tick(): void {
    if (!this.ready) return;
    if (this.pendingSkipped) this.transport.post(this.pendingSkipped);
    this.pendingSkipped = null;
    if (this.pendingPool) this.transport.post(this.pendingPool);
    this.pendingPool = null;
    if (this.pendingSlots) this.transport.post(this.pendingSlots);
    this.pendingSlots = null;
    for (const p of this.pendingRuns.values()) this.transport.post(p);
    this.pendingRuns.clear();
    if (this.selected === null || this.transport.busy?.()) return;
    this.followWorkers(this.selected);
  }

  private followWorkers(runId: string): void {
    const info = this.source.run(runId);
    if (!info) return;
    // The latest attempt of each task that has started one.
    for (const t of info.state.tasks) {
      const a = t.attempts[t.attempts.length - 1];
      if (!a) continue;
      const id = `${t.key}#${a.attempt}`;
      const entry = this.tails.get(id);
      if (!entry) {
        for (const old of [...this.tails.keys()]) if (old.startsWith(`${t.key}#`)) this.tails.delete(old);
        this.tails.set(id, { tail: new LogTail(path.join(a.dir, 'worker.log'), OUTPUT_RING_BYTES), key: t.key, attempt: a.attempt, done: false });
      }
    }
    const entries = [...this.tails.values()];
    const chunks: OutputChunk[] = [];
    let budget = MAX_TICK_OUTPUT_BYTES;
    // Start at a rotating worker so a budget cut does not always starve the same ones.
    const start = entries.length ? this.rotate++ % entries.length : 0;
    for (let i = 0; i < entries.length && budget > 0; i++) {
      const e = entries[(start + i) % entries.length];
      if (!e || e.done) continue;
      const phase = info.state.tasks.find((t) => t.key === e.key)?.attempts.find((x) => x.attempt === e.attempt)?.phase;
      const read = e.tail.read();
      // An attempt past its worker writes no more output: one last read after that, then stop polling it.
      if (phase === 'checking' || phase === 'done') e.done = true;
      if (!read || (!read.text && !read.reset)) continue;
      budget -= Buffer.byteLength(read.text);
      chunks.push({ key: e.key, attempt: e.attempt, text: read.text, reset: read.reset, totalBytes: read.totalBytes });
    }
    if (chunks.length) this.transport.post({ type: 'did-append-output', runId, chunks });
  }
}
