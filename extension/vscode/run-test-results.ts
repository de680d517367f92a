import path from 'node:path';
import * as vscode from 'vscode';
import { attemptDir } from '../core/config/home';
import { readFileTail } from '../core/dashboard/log-tail';
import type { RunInfo } from '../core/live/registry';
import type { TaskState } from '../core/live/state';
import { startedLabel } from './runs-tree';
import { attemptLabel } from '../../schemas/attempt-label';
import { afterLabel, graphOrder, oneLine } from '../../schemas/task-order';
import { resultSummary, taskResult } from '../../schemas/status';

/** Runs shown in the Test Explorer: the newest this many (live ones first, as the registry lists them). */
export const TEST_EXPLORER_RUNS = 20;
/** Bytes of check.log put into a failure message (its tail). */
const CHECK_OUTPUT_BYTES = 32 * 1024;
/** Attempt results already published, kept per workspace so a reload does not publish them twice (bounded). */
const REPORTED_KEY = 'verdict.testResults.reported';
const REPORTED_MAX = 5000;

/** One result as published to the Test Explorer, for the API and tests. */
export interface PublishedResult {
  runId: string;
  key: string;
  /** The task's last attempt when the result is the task's (passed, failed, skipped), else the attempt started; null for a task that had none (BLOCKED). */
  attempt: number | null;
  state: 'started' | 'passed' | 'failed' | 'skipped';
  /** The failure message (verdict, step, reason, check output); '' otherwise. */
  message: string;
  /** The check.log the failure message links to; null without one. */
  log: string | null;
  /** The id of the manifest's own test item (its suite in the workspace) given the same result; null when none is loaded. */
  manifestItem?: string | null;
}

/** A test item as the API shows it. */
export interface PublishedItem {
  id: string;
  label: string;
  description: string;
  children: PublishedItem[];
}

/**
 * Every run under VERDICT_HOME in the Test Explorer, whoever started it (the CLI, another window, this one): one root
 * "Verdict runs", a run per child (`name · identity · start time`), its tasks in the graph's order as test items
 * (description: the latest attempt's state with its step, `after a, b`, BLOCKED's reason), and each attempt as a test
 * result: passed, failed (the verdict, the step it ended in, the reason and the check output, the message located in
 * the attempt's check.log so one click opens the log), or skipped (CANCELLED; a BLOCKED task with its reason). A live
 * run's results go to one test run kept open while it runs (running attempts show as started); a finished run's
 * unpublished attempts go to one test run. Results are persisted by VS Code; which attempts were published is kept in
 * the workspace state so a reload publishes nothing twice. Fed by the runs tree's refreshes (its RunsWatcher).
 */
export class RunTestResults implements vscode.Disposable {
  private readonly root: vscode.TestItem;
  private readonly live = new Map<string, vscode.TestRun>();
  private readonly reported: Set<string>;
  private readonly published: PublishedResult[] = [];

  constructor(
    private readonly controller: vscode.TestController,
    private readonly home: () => string,
    private readonly memento: vscode.Memento,
  ) {
    this.root = controller.createTestItem('verdict-runs', 'Verdict runs');
    this.root.description = 'every run under VERDICT_HOME';
    this.root.sortText = '~';
    controller.items.add(this.root);
    this.reported = new Set(memento.get<string[]>(REPORTED_KEY, []));
  }

  /** Brings the items and results up to date with `runs` (the registry's list, live first then newest). */
  update(runs: readonly RunInfo[]): void {
    const shown = runs.slice(0, TEST_EXPLORER_RUNS);
    const keep = new Set(shown.map((r) => runItemId(r.state.runId)));
    this.root.children.forEach((item) => {
      if (!keep.has(item.id)) this.root.children.delete(item.id);
    });
    const before = this.reported.size;
    shown.forEach((info, i) => this.updateRun(info, i));
    for (const [runId, run] of this.live) {
      if (shown.some((r) => r.state.runId === runId && r.liveness === 'running')) continue;
      run.end();
      this.live.delete(runId);
    }
    if (this.reported.size !== before) void this.memento.update(REPORTED_KEY, [...this.reported].slice(-REPORTED_MAX));
  }

  /** What has been published since activation, in order. */
  results(): readonly PublishedResult[] {
    return this.published;
  }

  /** The items under "Verdict runs", as shown. */
  items(): PublishedItem[] {
    const walk = (item: vscode.TestItem): PublishedItem => {
      const children: vscode.TestItem[] = [];
      item.children.forEach((c) => void children.push(c));
      children.sort((a, b) => (a.sortText ?? a.label).localeCompare(b.sortText ?? b.label));
      return { id: item.id, label: item.label, description: item.description ?? '', children: children.map(walk) };
    };
    return walk(this.root).children;
  }

  dispose(): void {
    for (const run of this.live.values()) run.end();
    this.live.clear();
  }

  private updateRun(info: RunInfo, index: number): void {
    const s = info.state;
    const id = runItemId(s.runId);
    const item = this.root.children.get(id) ?? this.controller.createTestItem(id, `${s.runName} · ${s.identity} · ${startedLabel(s.startedAt)}`);
    item.description = `${info.liveness === 'orchestrator-died' ? 'orchestrator died' : info.liveness} · ${resultSummary(s.tasks.map((t) => t.status))}`;
    item.sortText = String(index).padStart(4, '0');
    this.root.children.add(item);
    const tasks = graphOrder(s.tasks);
    tasks.forEach((t, i) => {
      const tid = `${id}/${t.key}`;
      const child = item.children.get(tid) ?? this.controller.createTestItem(tid, t.key);
      const last = t.attempts.at(-1);
      child.description = [
        last && (last.verdict === null || last.verdict === t.status) ? attemptLabel(last) : t.status,
        afterLabel(t),
        t.status === 'BLOCKED' ? t.reason : '',
      ]
        .filter(Boolean)
        .join(' · ');
      child.sortText = String(i).padStart(4, '0');
      item.children.add(child);
    });
    this.publish(info, item, tasks);
  }

  /**
   * Publishes what is new in one run: started attempts (live runs), each finished attempt as a line of output, and
   * each task's result once it is final, from its status (schemas/status.ts `taskResult`): a task that passed on a
   * retry is passed (its failed attempts are output, not failures), a CANCELLED or BLOCKED one skipped.
   */
  private publish(info: RunInfo, item: vscode.TestItem, tasks: TaskState[]): void {
    const s = info.state;
    const isLive = info.liveness === 'running';
    let batch: vscode.TestRun | undefined = this.live.get(s.runId);
    const run = () => {
      if (batch) return batch;
      batch = this.controller.createTestRun(new vscode.TestRunRequest([item]), `${s.runName} · ${s.identity} · ${startedLabel(s.startedAt)}`, true);
      if (isLive) this.live.set(s.runId, batch);
      return batch;
    };
    for (const t of tasks) {
      const test = item.children.get(`${item.id}/${t.key}`);
      if (!test) continue;
      for (const a of t.attempts) {
        const id = `${s.runId}/${t.key}#${a.attempt}`;
        if (this.reported.has(id)) continue;
        if (a.phase !== 'done' || !a.verdict) {
          if (isLive && !this.reported.has(`${id}:started`)) {
            this.reported.add(`${id}:started`);
            run().started(test);
            this.record({ runId: s.runId, key: t.key, attempt: a.attempt, state: 'started', message: '', log: null });
          }
          continue;
        }
        this.reported.add(id);
        run().appendOutput(`${t.key} attempt ${a.attempt}: ${attemptLabel(a)}${a.notes ? ` — ${oneLine(a.notes)}` : ''}\r\n`, undefined, test);
      }
      // Once per task and number of attempts: `verdict resume` may run a final task again, and its new result counts.
      const outcome = `${s.runId}/${t.key}#result@${t.attempts.length}`;
      const result = taskResult(t.status);
      if (result === 'queued' || result === 'running' || this.reported.has(outcome)) continue;
      this.reported.add(outcome);
      this.result(run(), test, s.runId, t, result, this.manifestItem(s.manifestFile, t.key));
    }
    if (batch && !isLive) {
      // The run ended: its test run ends with what it published last (update() ends only those of runs gone from view).
      batch.end();
      this.live.delete(s.runId);
    }
  }

  /** Publishes a final task's result; a failure's message is its last attempt's verdict, reason and check output. */
  /** The task's test item under its manifest's suite (test-controller.ts ids: `<manifest uri>#<key>`), if loaded. */
  private manifestItem(manifestFile: string, key: string): vscode.TestItem | undefined {
    const suite = this.controller.items.get(vscode.Uri.file(manifestFile).toString());
    return suite?.children.get(`${suite.id}#${key}`);
  }

  /**
   * Publishes a final task's result on its item under "Verdict runs" and, when its manifest's suite is loaded, on the
   * manifest's own test item (so a manifest run from the CLI or the runs view does not read "Not yet run"); a
   * failure's message is its last attempt's verdict, reason and check output.
   */
  private result(
    run: vscode.TestRun,
    test: vscode.TestItem,
    runId: string,
    t: TaskState,
    result: 'passed' | 'failed' | 'skipped',
    own?: vscode.TestItem,
  ): void {
    const a = t.attempts.at(-1);
    const manifestItem = own?.id ?? null;
    const duration = t.attempts.reduce((ms, x) => ms + (x.endedAt !== null ? x.endedAt - x.startedAt : 0), 0) || undefined;
    if (result === 'passed') {
      for (const x of own ? [test, own] : [test]) run.passed(x, duration);
      this.record({ runId, key: t.key, attempt: a?.attempt ?? null, state: 'passed', message: '', log: null, manifestItem });
      return;
    }
    if (result === 'skipped') {
      const why = `${t.status}${t.reason ? ` — ${t.reason}` : a?.notes ? ` — ${a.notes}` : ''}`;
      for (const x of own ? [test, own] : [test]) run.skipped(x);
      run.appendOutput(`${t.key}: ${oneLine(why)}\r\n`, undefined, test);
      this.record({ runId, key: t.key, attempt: a?.attempt ?? null, state: 'skipped', message: why, log: null, manifestItem });
      return;
    }
    const log = a ? path.join(attemptDir(this.home(), runId, t.key, a.attempt), 'check.log') : null;
    const output = log ? readFileTail(log, CHECK_OUTPUT_BYTES) : null;
    const head = a
      ? `attempt ${a.attempt}: ${a.verdict === t.status ? attemptLabel(a) : t.status}${a.notes ? ` — ${a.notes}` : ''}`
      : `${t.status}${t.reason ? ` — ${t.reason}` : ''}`;
    const text = `${head}\n\n${output ? output.text || '(the check printed nothing)' : '(no check output: the attempt ended before its check)'}`;
    const message = new vscode.TestMessage(text);
    if (output && log) message.location = new vscode.Location(vscode.Uri.file(log), new vscode.Position(0, 0));
    for (const x of own ? [test, own] : [test]) run.failed(x, message, duration);
    this.record({ runId, key: t.key, attempt: a?.attempt ?? null, state: 'failed', message: text, log: output ? log : null, manifestItem });
  }

  private record(r: PublishedResult): void {
    this.published.push(r);
    if (this.published.length > REPORTED_MAX) this.published.shift();
  }
}

function runItemId(runId: string): string {
  return `verdict-run:${runId}`;
}
