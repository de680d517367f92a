import * as vscode from 'vscode';
import type { RunLauncher } from './launcher';
import { taskResult } from '../../schemas/status';
import { parseManifest } from '../core/run/manifest';

const MANIFEST_GLOB = '**/*.swarm.{json,jsonc}';

/**
 * Test Explorer: each manifest in the workspace is a suite, each task a test located at its key. Running tests runs
 * those tasks (one Verdict run per manifest); a task that does not PASS fails with its raw check output as the
 * message. In an untrusted workspace the run is refused with the reason, and every test is marked errored.
 */
export class ManifestTestController implements vscode.Disposable {
  readonly controller = vscode.tests.createTestController('verdict', 'Verdict');
  private readonly disposables: vscode.Disposable[] = [this.controller];

  constructor(
    private readonly launcher: RunLauncher,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.controller.resolveHandler = async (item) => {
      if (!item) await this.discover();
    };
    this.controller.refreshHandler = () => this.discover();
    this.controller.createRunProfile('Run', vscode.TestRunProfileKind.Run, (request, token) => this.run(request, token), true);
    const watcher = vscode.workspace.createFileSystemWatcher(MANIFEST_GLOB);
    this.disposables.push(
      watcher,
      watcher.onDidCreate((u) => void this.load(u)),
      watcher.onDidChange((u) => void this.load(u)),
      watcher.onDidDelete((u) => this.controller.items.delete(u.toString())),
    );
    // Discover now (in the background), so run-at-cursor and gutter icons work before the Testing view is opened.
    void this.discover().catch((e: Error) => log.warn(`Test Explorer discovery failed: ${e.message}`));
  }

  /** Finds every manifest in the workspace and (re)builds its suite. */
  async discover(): Promise<void> {
    const uris = await vscode.workspace.findFiles(MANIFEST_GLOB, '**/node_modules/**', 500);
    await Promise.all(uris.map((u) => this.load(u)));
  }

  /** (Re)builds one manifest's suite; a manifest that does not parse becomes a suite with an error and no tests. */
  async load(uri: vscode.Uri): Promise<vscode.TestItem> {
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    const suite = this.controller.createTestItem(uri.toString(), vscode.workspace.asRelativePath(uri), uri);
    const { manifest, problems } = parseManifest(text, uri.fsPath);
    if (!manifest) {
      suite.error = problems.find((p) => p.severity === 'error')?.message ?? 'invalid manifest';
    } else {
      const raw = manifest.raw as { tasks: { key: string }[] };
      manifest.tasks.forEach((t, i) => {
        const item = this.controller.createTestItem(`${uri.toString()}#${t.key}`, t.key, uri);
        item.description = t.engine;
        const keyAt = locateKey(text, raw.tasks[i]?.key ?? t.key);
        if (keyAt !== null) {
          item.range = new vscode.Range(offsetToPosition(text, keyAt), offsetToPosition(text, keyAt + t.key.length + 2));
        }
        suite.children.add(item);
      });
    }
    this.controller.items.add(suite);
    return suite;
  }

  private async run(request: vscode.TestRunRequest, token: vscode.CancellationToken): Promise<void> {
    const run = this.controller.createTestRun(request);
    const byManifest = new Map<string, { uri: vscode.Uri; tests: vscode.TestItem[] }>();
    const add = (t: vscode.TestItem) => {
      if (!t.uri) return;
      if (!t.parent) {
        t.children.forEach(add);
        return;
      }
      if (request.exclude?.includes(t)) return;
      const entry = byManifest.get(t.uri.toString()) ?? { uri: t.uri, tests: [] };
      entry.tests.push(t);
      byManifest.set(t.uri.toString(), entry);
    };
    if (request.include) request.include.forEach(add);
    else this.controller.items.forEach(add);
    try {
      for (const { uri, tests } of byManifest.values()) {
        if (token.isCancellationRequested) break;
        for (const t of tests) run.started(t);
        try {
          const summary = await this.launcher.run(uri.fsPath, {
            only: tests.map((t) => t.label),
            token,
            onEvent: (e) => {
              if (e.type === 'attempt-finished') {
                const t = tests.find((x) => x.label === e.key);
                if (t) run.appendOutput(`${e.key} attempt ${e.attempt}: ${e.verdict}${e.reason ? ` — ${e.reason}` : ''}\r\n`, undefined, t);
              }
            },
          });
          for (const s of summary.tasks) {
            const t = tests.find((x) => x.label === s.key);
            if (!t) continue;
            // The task's result from the status table: passed on a retry is passed; CANCELLED or BLOCKED is skipped.
            const result = taskResult(s.verdict);
            if (result === 'passed') run.passed(t, s.durationMs);
            else if (result === 'skipped') run.skipped(t);
            else {
              const message = new vscode.TestMessage(`${s.verdict}: ${s.reason}\n\n${s.checkOutput || '(the check produced no output)'}`);
              if (t.uri && t.range) message.location = new vscode.Location(t.uri, t.range);
              run.failed(t, message, s.durationMs);
            }
          }
        } catch (e) {
          this.log.error(`Test Explorer run of ${uri.fsPath}: ${(e as Error).message}`);
          for (const t of tests) run.errored(t, new vscode.TestMessage((e as Error).message));
        }
      }
    } finally {
      run.end();
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** Offset of `"key": "<key>"`'s value token in the text, or null. */
function locateKey(text: string, key: string): number | null {
  const re = new RegExp(`"key"\\s*:\\s*(${JSON.stringify(key).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')})`);
  const m = re.exec(text);
  return m ? m.index + m[0].length - (m[1]?.length ?? 0) : null;
}

function offsetToPosition(text: string, offset: number): vscode.Position {
  const before = text.slice(0, offset);
  const line = before.split('\n').length - 1;
  return new vscode.Position(line, offset - (before.lastIndexOf('\n') + 1));
}
