import { describeRun, listRuns, type RunInfo } from '../live/registry';
import { RunsWatcher } from '../live/watch';
import { slotsInUse } from '../run/slots';
import type { HostToPage, PoolView, RunView, SkippedView, SlotGroupView } from '../../../schemas/protocol';
import { runView, skippedView } from './run-view';

/** A change a source tells its sessions about: one of the run patches of the protocol. */
export type RunPatch = Extract<HostToPage, { type: 'did-change-run' | 'did-remove-run' | 'did-change-skipped' | 'did-change-pool' | 'did-change-slots' }>;

/**
 * The machine-wide limits under `home` (run/slots.ts: one table per limited engine or login) with the slots live runs
 * hold now, engines first, then logins, each by name; a table without a limit is left out, as `verdict runs` does.
 * [] when there is none. Never throws.
 */
export function slotGroupViews(home: string): SlotGroupView[] {
  const views = slotsInUse(home)
    .filter((s) => s.limit > 0)
    .map((s): SlotGroupView => {
      const login = s.group.startsWith('login-');
      return {
        group: s.group,
        kind: login ? 'login' : 'engine',
        name: s.group.replace(/^(engine|login)-/, ''),
        inUse: s.holders.length,
        limit: s.limit,
        holders: s.holders.map((h) => ({ runId: h.runId, task: h.task, engine: h.engine })),
      };
    });
  return views.sort((a, b) => (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === 'engine' ? -1 : 1));
}

/** A worker pool the dashboard follows (core/pool/monitor.ts's PoolMonitor): its last view and its updates. */
export interface PoolFeed {
  current(): PoolView | null;
  /** `fn` gets every read, and null when the feed stops following a pool. */
  subscribe(fn: (v: PoolView | null) => void): () => void;
}

/** Where a source says what it noticed (a state file skipped, and why). */
export interface DashboardLog {
  info(message: string): void;
  warn(message: string): void;
}

/** How often running runs are re-judged for liveness without a file change (a dead orchestrator writes nothing), ms. */
export const LIVENESS_TICK_MS = 1000;

/**
 * Every run under one VERDICT_HOME, kept current for any number of dashboard sessions: polls the runs folder
 * (RunsWatcher), re-reads state files when one changes, re-judges liveness and re-reads the machine-wide slot tables
 * every LIVENESS_TICK_MS, and tells
 * subscribers only what changed (whole runs; a run is a few KiB). Half-written or corrupt state files are skipped
 * with a note and the other runs still show. Dispose with `close()`.
 */
export class DashboardSource {
  private infos = new Map<string, RunInfo>();
  private json = new Map<string, string>();
  private skipped: SkippedView[] = [];
  private readonly listeners = new Set<(p: RunPatch) => void>();
  private readonly watcher: RunsWatcher;
  private readonly ticker: NodeJS.Timeout;
  private pool: { feed: PoolFeed; unsubscribe: () => void } | null = null;
  private slots: SlotGroupView[] = [];
  private slotsJson = '[]';

  /** `pool`: the worker pool to show beside the runs (see setPool). */
  constructor(
    readonly home: string,
    private readonly log: DashboardLog,
    opts: { pollMs?: number; pool?: PoolFeed } = {},
  ) {
    if (opts.pool) this.setPool(opts.pool);
    this.refresh();
    this.watcher = new RunsWatcher(home, () => this.refresh(), opts.pollMs ?? 200);
    this.ticker = setInterval(() => this.rejudge(), LIVENESS_TICK_MS);
    this.ticker.unref();
  }

  /**
   * Every run now (live first, then newest), the skipped state files, the pool's last view (null: none followed or not
   * read yet) and the machine-wide limits with their slots in use (slotGroupViews, as last read).
   */
  snapshot(): { runs: RunView[]; skipped: SkippedView[]; pool: PoolView | null; slots: SlotGroupView[] } {
    return { runs: [...this.infos.values()].map(runView), skipped: this.skipped, pool: this.pool?.feed.current() ?? null, slots: this.slots };
  }

  /** Follows another pool (null: none); each of its reads goes to subscribers as `did-change-pool`. */
  setPool(feed: PoolFeed | null): void {
    this.pool?.unsubscribe();
    this.pool = feed ? { feed, unsubscribe: feed.subscribe((pool) => this.emit({ type: 'did-change-pool', pool })) } : null;
  }

  /** The registry's view of one run (with its attempt folders), or undefined. */
  run(runId: string): RunInfo | undefined {
    return this.infos.get(runId);
  }

  /** Calls `fn` with every change from now on; returns the unsubscribe function. */
  subscribe(fn: (p: RunPatch) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Re-reads every state file and tells subscribers what changed. Called by the watcher; callable by hand. */
  refresh(): void {
    const { runs, skipped } = listRuns(this.home);
    const seen = new Set<string>();
    for (const info of runs) {
      seen.add(info.state.runId);
      this.update(info);
    }
    for (const id of [...this.infos.keys()]) {
      if (seen.has(id)) continue;
      this.infos.delete(id);
      this.json.delete(id);
      this.emit({ type: 'did-remove-run', runId: id });
    }
    const views = skipped.map(skippedView);
    if (JSON.stringify(views) !== JSON.stringify(this.skipped)) {
      for (const s of views.filter((v) => !this.skipped.some((o) => o.runId === v.runId && o.reason === v.reason))) {
        this.log.warn(`dashboard: skipped runs/${s.runId}/state.json: ${s.reason}`);
      }
      this.skipped = views;
      this.emit({ type: 'did-change-skipped', skipped: views });
    }
    this.refreshSlots();
  }

  /**
   * Re-reads the slot tables and tells subscribers when any group's slots in use changed (`did-change-slots`, every
   * group). The tables are not under runs/, so the watcher does not see them: the liveness tick reads them too.
   */
  refreshSlots(): void {
    const slots = slotGroupViews(this.home);
    const text = JSON.stringify(slots);
    if (text === this.slotsJson) return;
    this.slots = slots;
    this.slotsJson = text;
    this.emit({ type: 'did-change-slots', slots });
  }

  /** Stops polling. */
  close(): void {
    this.watcher.close();
    clearInterval(this.ticker);
    this.setPool(null);
    this.listeners.clear();
  }

  private rejudge(): void {
    for (const info of this.infos.values()) {
      if (info.state.status === 'running') this.update(describeRun(info.state, info.stateFile));
    }
    this.refreshSlots();
  }

  private update(info: RunInfo): void {
    const id = info.state.runId;
    const view = runView(info);
    const text = JSON.stringify(view);
    this.infos.set(id, info);
    if (this.json.get(id) === text) return;
    this.json.set(id, text);
    this.emit({ type: 'did-change-run', run: view });
  }

  private emit(p: RunPatch): void {
    for (const fn of this.listeners) fn(p);
  }
}
