// The page's state: what the host sent (runs, outputs, replies) and where the user is (view, run, filters).
// Host messages are applied in one exhaustive switch; only navigation is persisted through the host.
import {
  OUTPUT_RING_BYTES,
  type ArtifactKind,
  type HostToPage,
  type PageToHost,
  type PoolView,
  type ReviewerRow,
  type RunView,
  type ScoreRow,
  type RunAction,
  type SkippedView,
  type SlotGroupView,
  type TaskAction,
} from '../schemas/protocol';
import { host } from './host';

/** The views of the app. */
export type ViewName = 'live' | 'run' | 'library' | 'scoreboard';

/** What survives a reload of the page: navigation only, never data (data comes from a fresh snapshot). */
export interface Navigation {
  view: ViewName;
  runId: string | null;
  library: { name: string; identity: string; from: string; to: string };
  scoreboard: { taskType: string; model: string };
}

/** A worker's output as the page holds it: at most OUTPUT_RING_BYTES characters, cut at a line start. */
export interface OutputTail {
  attempt: number;
  text: string;
  totalBytes: number;
  /** Page time (Date.now) of the last append, for the bench. */
  at: number;
}

/** One loaded (or loading) artifact. */
export interface ArtifactState {
  loading: boolean;
  text: string | null;
  truncatedBytes: number;
  error: string | null;
}

/** The last action asked for on a task (its buttons): pending until the host's did-act. */
export interface ActState {
  action: TaskAction;
  pending: boolean;
  result: 'done' | 'refused' | 'sent' | null;
  message: string;
}

/** The last pause, resume or drain asked for on a run (its buttons): pending until the host's did-run-act. */
export interface RunActState {
  action: RunAction;
  pending: boolean;
  result: 'done' | 'refused' | 'sent' | null;
  message: string;
}

/** A task's diff as the browser host served it (its diff endpoint). */
export interface DiffState {
  loading: boolean;
  text: string | null;
  error: string | null;
}

const saved = host.getState<Navigation>();

/** Everything the views render. */
export const app = $state({
  connected: false,
  home: '',
  runs: {} as Record<string, RunView>,
  skipped: [] as SkippedView[],
  /** The worker pool the host follows, null: none. */
  pool: null as PoolView | null,
  /** The machine-wide engine and login limits with their slots in use now; []: none. */
  slots: [] as SlotGroupView[],
  outputs: {} as Record<string, OutputTail>,
  artifacts: {} as Record<string, ArtifactState>,
  scoreboard: null as { rows: ScoreRow[]; reviews: ReviewerRow[]; source: string; quarantined: number; error: string | null } | null,
  acts: {} as Record<string, ActState>,
  /** By run id. */
  runActs: {} as Record<string, RunActState>,
  diffs: {} as Record<string, DiffState>,
  rejected: [] as string[],
  nav: (saved ?? { view: 'live', runId: null, library: { name: '', identity: '', from: '', to: '' }, scoreboard: { taskType: '', model: '' } }) as Navigation,
  /** Page clock, ticks every second for elapsed times. */
  now: Date.now(),
});

let seq = 1;

/** Key of a worker's output: run and task (the attempt is inside the value). */
export const outputKey = (runId: string, key: string) => `${runId}/${key}`;
/** Key of an artifact. */
export const artifactKey = (runId: string, artifact: ArtifactKind, key: string | null, attempt: number | null) =>
  `${runId}/${artifact}/${key ?? ''}/${attempt ?? ''}`;

function send(m: PageToHost): void {
  host.post(m);
}

/** Saves navigation with the host and tells it which run's workers to stream. */
export function navigate(view: ViewName, runId: string | null = app.nav.runId): void {
  app.nav.view = view;
  app.nav.runId = view === 'run' ? runId : app.nav.runId;
  persist();
  send({ type: 'select-run', runId: view === 'run' ? runId : null });
  if (view === 'scoreboard') send({ type: 'load-scoreboard', seq: seq++ });
}

/** Persists the navigation state (call after changing filters). */
export function persist(): void {
  host.setState($state.snapshot(app.nav));
}

/** Asks the host for an artifact, once; the reply fills app.artifacts. */
export function loadArtifact(runId: string, artifact: ArtifactKind, key: string | null = null, attempt: number | null = null): void {
  const id = artifactKey(runId, artifact, key, attempt);
  if (app.artifacts[id] && !app.artifacts[id].error) return;
  app.artifacts[id] = { loading: true, text: null, truncatedBytes: 0, error: null };
  send(
    key === null || attempt === null
      ? { type: 'load-artifact', seq: seq++, runId, artifact }
      : { type: 'load-artifact', seq: seq++, runId, artifact, key, attempt },
  );
}

/** Key of a task's action state and diff: run and task. */
export const taskKey = (runId: string, key: string) => `${runId}/${key}`;

/**
 * Asks the host to act on a task (its buttons). In the browser, `open-diff` reads the host's diff endpoint and the
 * page shows the text; in VS Code the extension opens its diff editor.
 */
export function act(runId: string, key: string, action: TaskAction): void {
  const id = taskKey(runId, key);
  if (action === 'open-diff' && host.getText) {
    if (app.diffs[id]?.text) {
      delete app.diffs[id];
      return;
    }
    app.diffs[id] = { loading: true, text: null, error: null };
    host.getText(`diff?run=${encodeURIComponent(runId)}&task=${encodeURIComponent(key)}`).then(
      (r) =>
        (app.diffs[id] =
          r.status === 200 ? { loading: false, text: r.text, error: null } : { loading: false, text: null, error: r.text.trim() || `HTTP ${r.status}` }),
      (e: Error) => (app.diffs[id] = { loading: false, text: null, error: e.message }),
    );
    return;
  }
  app.acts[id] = { action, pending: true, result: null, message: '' };
  send({ type: 'task-action', seq: seq++, runId, key, action });
}

/** Asks the host to pause, resume or drain a run (its buttons); the reply fills app.runActs. */
export function actOnRun(runId: string, action: RunAction): void {
  app.runActs[runId] = { action, pending: true, result: null, message: '' };
  send({ type: 'run-action', seq: seq++, runId, action });
}

/** Applies one host message. */
export function apply(m: HostToPage): void {
  switch (m.type) {
    case 'snapshot':
      app.home = m.home;
      app.runs = Object.fromEntries(m.runs.map((r) => [r.runId, r]));
      app.skipped = m.skipped;
      app.pool = m.pool ?? null;
      app.slots = m.slots ?? [];
      app.outputs = {};
      app.artifacts = {};
      app.acts = {};
      app.runActs = {};
      app.diffs = {};
      break;
    case 'did-change-run': {
      const old = app.runs[m.run.runId];
      app.runs[m.run.runId] = m.run;
      // A finished attempt's check output may be asked for again: drop cached ones of this run that were missing.
      if (old) for (const [k, v] of Object.entries(app.artifacts)) if (k.startsWith(`${m.run.runId}/`) && v.error) delete app.artifacts[k];
      break;
    }
    case 'did-remove-run':
      delete app.runs[m.runId];
      break;
    case 'did-change-skipped':
      app.skipped = m.skipped;
      break;
    case 'did-change-pool':
      app.pool = m.pool;
      break;
    case 'did-change-slots':
      app.slots = m.slots;
      break;
    case 'did-append-output':
      for (const c of m.chunks) {
        const id = outputKey(m.runId, c.key);
        const old = app.outputs[id];
        let text = c.reset || !old || old.attempt !== c.attempt ? c.text : old.text + c.text;
        if (text.length > OUTPUT_RING_BYTES) {
          text = text.slice(text.length - OUTPUT_RING_BYTES);
          const nl = text.indexOf('\n');
          if (nl >= 0 && nl < text.length - 1) text = text.slice(nl + 1);
        }
        app.outputs[id] = { attempt: c.attempt, text, totalBytes: c.totalBytes, at: Date.now() };
      }
      break;
    case 'did-load-artifact':
      app.artifacts[artifactKey(m.runId, m.artifact, m.key, m.attempt)] = { loading: false, text: m.text, truncatedBytes: m.truncatedBytes, error: m.error };
      break;
    case 'did-load-scoreboard':
      app.scoreboard = { rows: m.rows, reviews: m.reviews, source: m.source, quarantined: m.quarantined, error: m.error };
      break;
    case 'did-act':
      app.acts[taskKey(m.runId, m.key)] = { action: m.action, pending: false, result: m.result, message: m.message };
      break;
    case 'did-run-act':
      app.runActs[m.runId] = { action: m.action, pending: false, result: m.result, message: m.message };
      break;
    case 'did-reject':
      app.rejected = [...app.rejected.slice(-4), m.reason];
      break;
    case 'show-view':
      navigate(m.view);
      break;
    default: {
      const never: never = m;
      console.warn('verdict dashboard: unknown host message', never);
    }
  }
}

/** Connects to the host: `ready` on every (re)connection, then the current view again. */
export function connect(): void {
  host.start(
    apply,
    () => {
      app.connected = true;
      send({ type: 'ready' });
      navigate(app.nav.view, app.nav.runId);
    },
    () => {
      app.connected = false;
    },
  );
  setInterval(() => (app.now = Date.now()), 1000);
}
