import path from 'node:path';
import * as vscode from 'vscode';
import { attemptDir } from '../core/config/home';
import { listRuns, type RunInfo } from '../core/live/registry';
import { runContextValue } from '../core/live/run-context';
import type { AttemptState, TaskState } from '../core/live/state';
import { RunsWatcher } from '../core/live/watch';
import { waitsLine } from '../core/run/quota-wait';
import { attemptLabel } from '../../schemas/attempt-label';
import { spendLine } from '../../schemas/spend';
import { groupedOrder, type CandidateRow, type MemberRow, type TaskRow } from '../../schemas/task-order';
import { taskRowText, type TaskPlace } from './task-row-text';
import { resultSummary, runResult, type TaskResult } from '../../schemas/status';
import { poolSummary, type PoolAttemptRef, type PoolView, type PoolWorkerView } from '../../schemas/pool-view';
import type { PoolFeed } from '../core/dashboard/source';
import { changedFiles } from './changed-files';
import { readyToMerge } from '../core/run/landed';
import { gitFileUri } from './git-content';

/** A task as commands receive it, from a tree node or from a caller (tests, the API). */
export interface TaskRef {
  runId: string;
  key: string;
}

/** The kinds of log an attempt keeps. */
export type LogKind = 'prompt' | 'worker' | 'check';

/** One row of the runs tree. */
export type RunsNode =
  | { kind: 'run'; runId: string; info: RunInfo }
  | {
      kind: 'task';
      runId: string;
      key: string;
      task: TaskState;
      info: RunInfo;
      row?: TaskRow<TaskState>;
      candidate?: CandidateRow<TaskState>;
      member?: MemberRow<TaskState>;
      ready?: true;
    }
  /** "Ready to merge": every passed task not yet merged or discarded, across the runs of worktree mode (task-landing.ts readyToMerge). */
  | { kind: 'ready'; runId?: undefined }
  | { kind: 'attempt'; runId: string; key: string; attempt: AttemptState; info: RunInfo }
  | { kind: 'log'; runId: string; key: string; attempt: number; log: LogKind; file: string }
  | { kind: 'changes'; runId: string; key: string; task: TaskState; info: RunInfo }
  | { kind: 'file'; runId: string; key: string; repo: string; base: string; head: string; status: string; path: string }
  /** The worker pool of `verdict.pool` (first row, when set), its workers, and what each runs (no run of its own: runId undefined). */
  | { kind: 'pool'; runId?: undefined }
  | { kind: 'pool-worker'; runId?: undefined; worker: PoolWorkerView }
  | { kind: 'pool-attempt'; runId: string; ref: PoolAttemptRef };

const LOG_FILES: Record<LogKind, string> = { prompt: 'prompt.md', worker: 'worker.log', check: 'check.log' };

/**
 * The `verdict.runs` view: every run under VERDICT_HOME (live first, whichever process writes it, CLI runs included)
 * → tasks (verdict icon, attempts, duration, tokens) → attempts (prompt, worker log, check log) and changed files.
 * It polls the run folder (RunsWatcher), so a state change shows within half a second. With a pool followed
 * (`verdict.pool`), its first row is the pool: workers (host, state, slots, engines, heartbeat) → the attempts each runs.
 */
export class RunsTreeProvider implements vscode.TreeDataProvider<RunsNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private watcher: RunsWatcher;
  private snapshot: RunInfo[] = [];
  private readonly listeners: ((runs: RunInfo[]) => void)[] = [];
  /** The one pool row (the same object each time, so a pool read redraws only it). */
  private readonly poolNode: RunsNode = { kind: 'pool' };
  /** The one "Ready to merge" row. */
  private readonly readyNode: RunsNode = { kind: 'ready' };
  private pool: PoolView | null = null;
  private readonly unsubscribePool: () => void;

  /** `pool`: the worker pool to show as the first row (core/pool/monitor.ts); absent: none. */
  constructor(
    private home: string,
    private readonly log: vscode.LogOutputChannel,
    poolFeed?: PoolFeed,
  ) {
    this.watcher = new RunsWatcher(home, () => this.refresh());
    this.pool = poolFeed?.current() ?? null;
    this.unsubscribePool =
      poolFeed?.subscribe((v) => {
        const appeared = (v === null) !== (this.pool === null);
        this.pool = v;
        this.changed.fire(appeared ? undefined : this.poolNode);
      }) ?? (() => undefined);
    this.refresh();
  }

  /** Points the view at another VERDICT_HOME (settings change). */
  setHome(home: string): void {
    if (home === this.home) return;
    this.home = home;
    this.watcher.close();
    this.watcher = new RunsWatcher(home, () => this.refresh());
    this.refresh();
  }

  /** Re-reads every run and redraws. */
  refresh(): void {
    const { runs, skipped } = listRuns(this.home);
    for (const s of skipped) this.log.warn(`skipped ${s.stateFile}: ${s.reason}`);
    this.snapshot = runs;
    for (const l of this.listeners) l(runs);
    this.changed.fire(undefined);
  }

  /** The runs as last read. */
  runs(): RunInfo[] {
    return this.snapshot;
  }

  /** Called after every refresh with the runs (the status bar uses it). */
  onRuns(listener: (runs: RunInfo[]) => void): void {
    this.listeners.push(listener);
    listener(this.snapshot);
  }

  /** The run and task a reference names, from the last snapshot. */
  find(ref: TaskRef): { info: RunInfo; task: TaskState } | undefined {
    const info = this.snapshot.find((r) => r.state.runId === ref.runId);
    const task = info?.state.tasks.find((t) => t.key === ref.key);
    return info && task ? { info, task } : undefined;
  }

  /** Path of an attempt's log. */
  logFile(ref: TaskRef, attempt: number, kind: LogKind): string {
    return path.join(attemptDir(this.home, ref.runId, ref.key, attempt), LOG_FILES[kind]);
  }

  getChildren(node?: RunsNode): RunsNode[] | Promise<RunsNode[]> {
    if (!node)
      return [
        ...(this.pool ? [this.poolNode] : []),
        ...(this.readyTasks().length ? [this.readyNode] : []),
        ...this.snapshot.map((info): RunsNode => ({ kind: 'run', runId: info.state.runId, info })),
      ];
    switch (node.kind) {
      case 'ready':
        return this.readyTasks();
      case 'pool':
        return (this.pool?.workers ?? []).map((worker) => ({ kind: 'pool-worker', worker }));
      case 'pool-worker':
        return node.worker.running.map((ref) => ({ kind: 'pool-attempt', runId: ref.runId, ref }));
      case 'run':
        // The task graph's order: a task after its prerequisites, a best-of-N task's candidates under it, a validated,
        // council or phases task's members under its lead (as in the dashboard and the CLI).
        return groupedOrder(node.info.state.tasks, node.info.state.inputNames).map((row) => ({
          kind: 'task',
          runId: node.runId,
          key: row.task.key,
          task: row.task,
          info: node.info,
          row,
        }));
      case 'task': {
        const children: RunsNode[] = (node.row?.candidates ?? []).map((candidate) => ({
          kind: 'task',
          runId: node.runId,
          key: candidate.task.key,
          task: candidate.task,
          info: node.info,
          candidate,
        }));
        children.push(
          ...(node.row?.members ?? []).map((member): RunsNode => ({
            kind: 'task',
            runId: node.runId,
            key: member.task.key,
            task: member.task,
            info: node.info,
            member,
          })),
        );
        children.push(...node.task.attempts.map((attempt): RunsNode => ({ kind: 'attempt', runId: node.runId, key: node.key, attempt, info: node.info })));
        if (node.task.commit && node.info.state.baseSha) children.push({ kind: 'changes', runId: node.runId, key: node.key, task: node.task, info: node.info });
        return children;
      }
      case 'attempt':
        return (Object.keys(LOG_FILES) as LogKind[]).map((log) => ({
          kind: 'log',
          runId: node.runId,
          key: node.key,
          attempt: node.attempt.attempt,
          log,
          file: this.logFile(node, node.attempt.attempt, log),
        }));
      case 'changes':
        return this.changedFileNodes(node);
      // Leaves: a changed file, a log, a pool worker's attempt.
      case 'file':
      case 'log':
      case 'pool-attempt':
        return [];
    }
  }

  /** The passed tasks waiting to be merged, newest run first (the snapshot's order), as task rows naming their run. */
  readyTasks(): RunsNode[] {
    return this.snapshot
      .filter((info) => info.state.worktrees)
      .flatMap((info) =>
        info.state.tasks.filter(readyToMerge).map((task): RunsNode => ({ kind: 'task', runId: info.state.runId, key: task.key, task, info, ready: true })),
      );
  }

  getTreeItem(node: RunsNode): vscode.TreeItem {
    switch (node.kind) {
      case 'ready': {
        const n = this.readyTasks().length;
        const item = new vscode.TreeItem('Ready to merge', vscode.TreeItemCollapsibleState.Expanded);
        item.id = 'ready-to-merge';
        item.description = `${n} passed task${n === 1 ? '' : 's'} not merged`;
        item.tooltip =
          'Tasks that passed, whose branches hold work nothing was done with yet (neither merged nor discarded), in every run. Merge or discard each from its row.';
        item.iconPath = new vscode.ThemeIcon('git-merge');
        item.accessibilityInformation = { label: `Ready to merge: ${item.description}` };
        item.contextValue = 'readyToMerge';
        return item;
      }
      case 'run':
        return runItem(node.info);
      case 'task':
        return taskItem(node.task, node, node.ready ? node.info.state.runName : undefined);
      case 'attempt': {
        const a = node.attempt;
        const item = new vscode.TreeItem(`attempt ${a.attempt}`, vscode.TreeItemCollapsibleState.Collapsed);
        // The machine it runs on, when not the run's own (a pool worker).
        const elsewhere = a.host && a.host !== node.info.state.host ? ` · on ${a.host}` : '';
        item.description = `${attemptLabel(a, node.info.liveness === 'orchestrator-died')}${a.endedAt ? ` · ${seconds(a.endedAt - a.startedAt)}` : ''}${elsewhere}`;
        item.tooltip = a.notes || undefined;
        item.contextValue = 'attempt';
        return item;
      }
      case 'log': {
        const item = new vscode.TreeItem(LOG_FILES[node.log], vscode.TreeItemCollapsibleState.None);
        item.resourceUri = vscode.Uri.file(node.file);
        item.command = { command: 'verdict.openLog', title: 'Open Log', arguments: [node] };
        item.contextValue = 'log';
        return item;
      }
      case 'changes': {
        const item = new vscode.TreeItem('changed files', vscode.TreeItemCollapsibleState.Collapsed);
        item.iconPath = new vscode.ThemeIcon('diff');
        item.contextValue = 'changes';
        return item;
      }
      case 'pool': {
        const item = new vscode.TreeItem('Worker pool', vscode.TreeItemCollapsibleState.Expanded);
        item.id = 'pool';
        item.description = this.pool ? poolSummary(this.pool) : '';
        item.tooltip = this.pool ? `${this.pool.url}\nread ${new Date(this.pool.readAt).toLocaleTimeString()}` : undefined;
        item.iconPath = new vscode.ThemeIcon(
          this.pool?.error ? 'warning' : 'server-environment',
          this.pool?.error ? new vscode.ThemeColor('problemsWarningIcon.foreground') : undefined,
        );
        item.contextValue = 'pool';
        return item;
      }
      case 'pool-worker':
        return poolWorkerItem(node.worker);
      case 'pool-attempt': {
        const { runId, taskKey, attempt } = node.ref;
        const run = this.snapshot.find((r) => r.state.runId === runId);
        const item = new vscode.TreeItem(`${run?.state.runName ?? runId} / ${taskKey}`, vscode.TreeItemCollapsibleState.None);
        item.description = `attempt ${attempt}`;
        item.tooltip = `${runId}/${taskKey}/${attempt}`;
        item.iconPath = new vscode.ThemeIcon('loading~spin');
        item.contextValue = 'poolAttempt';
        return item;
      }
      case 'file': {
        const item = new vscode.TreeItem(node.path, vscode.TreeItemCollapsibleState.None);
        item.description = node.status;
        item.resourceUri = vscode.Uri.file(path.join(node.repo, node.path));
        item.command = { command: 'vscode.diff', title: 'Review', arguments: diffArguments(node) };
        item.contextValue = 'changedFile';
        return item;
      }
    }
  }

  getParent(): undefined {
    return undefined;
  }

  /** The changed files of a passed worktree task, base_ref against its committed work. */
  async changedFileNodes(node: { runId: string; key: string; task: TaskState; info: RunInfo }): Promise<RunsNode[]> {
    const { repo, baseSha } = node.info.state;
    if (!repo || !baseSha || !node.task.commit) return [];
    const files = await changedFiles(repo, baseSha, node.task.commit);
    return files.map((f) => ({
      kind: 'file',
      runId: node.runId,
      key: node.key,
      repo,
      base: baseSha,
      head: node.task.commit as string,
      status: f.status,
      path: f.path,
    }));
  }

  dispose(): void {
    this.unsubscribePool();
    this.watcher.close();
    this.changed.dispose();
  }
}

/** Arguments of `vscode.diff` for a changed file: base version, task version, title. */
export function diffArguments(node: { repo: string; base: string; head: string; path: string; key: string }): [vscode.Uri, vscode.Uri, string] {
  return [gitFileUri(node.repo, node.base, node.path), gitFileUri(node.repo, node.head, node.path), `${node.path} (base ↔ ${node.key})`];
}

const poolStateIcon: Record<PoolWorkerView['state'], [string, string?]> = {
  live: ['vm-active', 'testing.iconPassed'],
  draining: ['vm-outline', 'charts.yellow'],
  stopped: ['vm-outline', 'disabledForeground'],
  lost: ['vm-connect', 'errorForeground'],
};

function poolWorkerItem(w: PoolWorkerView): vscode.TreeItem {
  const item = new vscode.TreeItem(w.host, w.running.length ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
  item.id = `pool-worker:${w.workerId}`;
  item.description = w.detail;
  item.tooltip = `${w.workerId} (pid ${w.pid})\nstarted ${new Date(w.startedAt).toLocaleString()}`;
  const [icon, color] = poolStateIcon[w.state];
  item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
  item.contextValue = `poolWorker.${w.state}`;
  return item;
}

/** A finished run's icon by its result (schemas/status.ts `runResult`, as the Testing view ranks its tasks). */
const RUN_ICON: Record<TaskResult, vscode.ThemeIcon> = {
  passed: new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed')),
  failed: new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed')),
  skipped: new vscode.ThemeIcon('circle-slash'),
  running: new vscode.ThemeIcon('circle-outline'),
  queued: new vscode.ThemeIcon('circle-outline'),
};

function runItem(info: RunInfo): vscode.TreeItem {
  const s = info.state;
  const item = new vscode.TreeItem(s.runName, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `run:${s.runId}`;
  const liveness = info.liveness === 'orchestrator-died' ? 'orchestrator died' : info.liveness;
  // Spent, reserved and budget (schemas/spend.ts spendLine), live: the state file is rewritten as they change.
  // Paused or draining first: a long description is cut at the view's edge, and a paused run must not look like one at work.
  const live = info.liveness === 'running';
  const mode = live && s.paused ? 'PAUSED' : live && s.draining ? 'DRAINING' : '';
  item.description = [
    mode,
    resultSummary(s.tasks.map((t) => t.status)),
    mode ? '' : liveness,
    waitsLine(s),
    spendLine(s.spend),
    s.identity,
    startedLabel(s.startedAt),
  ]
    .filter(Boolean)
    .join(' · ');
  // Tokens are summed over attempts that reported usage; none reported reads as unknown, as in the dashboard.
  item.tooltip = `${s.runId}\n${s.manifestFile}\nstarted ${new Date(s.startedAt).toLocaleString()} on ${s.host} (pid ${s.pid})\n${info.tokens ? `${info.tokens} tokens` : 'tokens: —'}`;
  // A screen reader reads the run's name and state, not the tooltip.
  item.accessibilityInformation = { label: `run ${s.runName}: ${item.description}` };
  item.iconPath =
    live && s.paused
      ? new vscode.ThemeIcon('debug-pause', new vscode.ThemeColor('charts.yellow'))
      : info.liveness === 'running'
        ? new vscode.ThemeIcon('sync~spin')
        : info.liveness === 'orchestrator-died'
          ? new vscode.ThemeIcon('debug-disconnect', new vscode.ThemeColor('errorForeground'))
          : RUN_ICON[runResult(s.tasks.map((t) => t.status))];
  // The menus' when clauses match on it (package.json; core/live/run-context.ts says what each part means).
  item.contextValue = runContextValue(info);
  return item;
}

/** A task's row (its text: task-row-text.ts); under "Ready to merge", `runName` leads its description. */
function taskItem(t: TaskState, place: TaskPlace, runName?: string): vscode.TreeItem {
  const text = taskRowText(t, place);
  const item = new vscode.TreeItem(text.label, vscode.TreeItemCollapsibleState.Collapsed);
  item.description = runName ? `${runName} · ${text.description}` : text.description;
  item.tooltip = text.tooltip;
  // A screen reader reads the task's name and its status, then the row's details, not the tooltip.
  item.accessibilityInformation = { label: `task ${t.key}: ${t.status}${text.description ? `, ${text.description}` : ''}` };
  const [icon, color] = text.icon;
  item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
  item.contextValue = text.contextValue;
  return item;
}

/** When a run started, for telling runs apart: the time today, else the date and time. */
export function startedLabel(at: number, now = new Date()): string {
  const d = new Date(at);
  const p = (n: number) => String(n).padStart(2, '0');
  const time = `${p(d.getHours())}:${p(d.getMinutes())}`;
  return d.toDateString() === now.toDateString() ? time : `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${time}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
