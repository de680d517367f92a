import * as vscode from 'vscode';
import { taskLogText } from '../core/dashboard/task-log';
import type { RunInfo } from '../core/live/registry';

/** The URI scheme of live task logs: read-only documents that follow a task's worker output. */
export const TASK_LOG_SCHEME = 'verdict-task-log';

/** How often an open live log is read again while its run is live, ms. */
const FOLLOW_MS = 500;

/** The live log document of task `key` of run `runId`: `verdict-task-log:/<runId>/<key>.log`. */
export function taskLogUri(runId: string, key: string): vscode.Uri {
  return vscode.Uri.from({ scheme: TASK_LOG_SCHEME, path: `/${runId}/${key}.log`, query: new URLSearchParams({ run: runId, task: key }).toString() });
}

/**
 * Live task logs (Verdict: Follow Task Log): each open `verdict-task-log:` document shows core/dashboard/task-log.ts
 * `taskLogText` of its task — the latest attempt's worker output, its last 64 KiB — and is read again every 500 ms
 * while any is open, changing (and scrolling a view that was at its end to the new end) only when the text changed.
 * Read-only by construction (a content provider's document), so closing it never asks to save. Nothing is read once
 * no live log is open.
 */
export class TaskLogProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly texts = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private readonly subscriptions: vscode.Disposable[] = [];

  /**
   * @param home VERDICT_HOME now (settings may change it)
   * @param runs the runs as the runs view last read them
   */
  constructor(
    private readonly home: () => string,
    private readonly runs: () => RunInfo[],
  ) {
    this.subscriptions.push(
      vscode.workspace.onDidCloseTextDocument((doc) => {
        if (doc.uri.scheme !== TASK_LOG_SCHEME) return;
        this.texts.delete(doc.uri.toString());
        this.schedule();
      }),
    );
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const text = this.read(uri);
    this.texts.set(uri.toString(), text);
    this.schedule();
    return text;
  }

  /** Opens task `key` of run `runId`'s live log beside the editor; resolves with its editor. */
  async open(runId: string, key: string): Promise<vscode.TextEditor> {
    const doc = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(taskLogUri(runId, key)), 'log');
    const editor = await vscode.window.showTextDocument(doc, { preview: false });
    revealEnd(editor);
    return editor;
  }

  private read(uri: vscode.Uri): string {
    const q = new URLSearchParams(uri.query);
    const runId = q.get('run') ?? '';
    const key = q.get('task') ?? '';
    const info = this.runs().find((r) => r.state.runId === runId);
    if (!info) return `# no run ${runId} under ${this.home()} (it was cleaned, or verdict.home changed)\n`;
    return taskLogText(this.home(), info, key);
  }

  /** Polls while some live log is open. */
  private schedule(): void {
    const open = this.texts.size > 0;
    if (open && !this.timer) this.timer = setInterval(() => this.poll(), FOLLOW_MS);
    if (!open && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private poll(): void {
    for (const [key, before] of this.texts) {
      const uri = vscode.Uri.parse(key);
      const text = this.read(uri);
      if (text === before) continue;
      const following = vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === key && atEnd(e));
      this.texts.set(key, text);
      this.changed.fire(uri);
      // A view that showed the end keeps showing it once the document has the new text.
      if (following.length) setTimeout(() => following.forEach(revealEnd), 50);
    }
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.changed.dispose();
    for (const s of this.subscriptions) s.dispose();
  }
}

function atEnd(e: vscode.TextEditor): boolean {
  const last = e.visibleRanges[e.visibleRanges.length - 1];
  return !last || last.end.line >= e.document.lineCount - 2;
}

function revealEnd(e: vscode.TextEditor): void {
  const line = Math.max(0, e.document.lineCount - 1);
  e.revealRange(new vscode.Range(line, 0, line, 0), vscode.TextEditorRevealType.Default);
}
