import path from 'node:path';
import * as vscode from 'vscode';
import { resolveHome } from '../core/config/home';
import { writeCliShim } from '../core/host/cli-shim';
import { runContextKeys } from '../core/live/run-context';
import { nodeCommand } from '../core/run/run-launch';
import { containmentChoice } from '../core/config/settings';
import { reconcileDeadRuns } from '../core/run/reconcile';
import { containmentLine } from '../core/process/containment-line';
import { probeSandbox } from '../core/process/sandbox';
import type { VerdictApi } from './api';
import { registerCommands } from './commands';
import { TASK_LOG_SCHEME, TaskLogProvider } from './task-log';
import { registerDashboard } from './dashboard/register';
import { DOCTOR_SCHEME, doctorReports } from './doctor';
import { ManifestDiagnostics } from './diagnostics';
import { editorEngines } from './engines';
import { ForecastLensProvider, runForecast } from './forecast';
import { GIT_SCHEME, GitContentProvider } from './git-content';
import { RunLauncher } from './launcher';
import { registerMcpProvider } from './mcp-provider';
import { RunsTreeProvider } from './runs-tree';
import { PoolMonitor } from '../core/pool/monitor';
import { readSettings } from './settings';
import { RunsStatusBar } from './status-bar';
import { ManifestTestController } from './test-controller';
import { RunTestResults } from './run-test-results';
import { lintManifestFile } from '../core/run/manifest';
import { WORKFLOW_SECTIONS } from '../core/run/workflows';

/**
 * Wires the extension: the log, manifest diagnostics, the runs view and status bar, diffs over git objects, the
 * Test Explorer and the command table; returns the {@link VerdictApi}. Everything else lives in extension/core,
 * which never imports vscode.
 */
export function activate(context: vscode.ExtensionContext): VerdictApi {
  const t0 = performance.now();
  const log = vscode.window.createOutputChannel('Verdict', { log: true });
  const diagnostics = new ManifestDiagnostics(
    () => editorEngines(log),
    () => readSettings().allowFullAccess,
    log,
  );
  // The worker pool of `verdict.pool` (or the config file's "pool"), read every 2 s for the runs tree and the dashboard.
  const pool = new PoolMonitor();
  void pool.follow(readSettings().poolUrl ?? null);
  const tree = new RunsTreeProvider(resolveHome(readSettings().home), log, pool);
  const lenses = new ForecastLensProvider(log);
  // Runs are detached `verdict run` processes of the bundled CLI: they outlive this window (see RunLauncher).
  const launcher = new RunLauncher(vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath, log);
  const statusBar = new RunsStatusBar();
  // Live task logs follow the runs the view reads, under the home the settings name now.
  const taskLogs = new TaskLogProvider(
    () => resolveHome(readSettings().home),
    () => tree.runs(),
  );
  tree.onRuns((runs) => statusBar.update(runs));
  // Run commands show in the palette only when some run allows them (package.json menus' when clauses).
  tree.onRuns((runs) => {
    for (const [key, value] of Object.entries(runContextKeys(runs))) void vscode.commands.executeCommand('setContext', key, value);
  });
  // The Test Explorer: manifests in the workspace as suites, and every run under VERDICT_HOME with its results.
  const tests = new ManifestTestController(launcher, log);
  const testResults = new RunTestResults(tests.controller, () => resolveHome(readSettings().home), context.workspaceState);
  tree.onRuns((runs) => testResults.update(runs));
  // The probe runs bwrap once (cached for the process); never awaited here, so activation never waits for it.
  const showContainment = () =>
    void probeSandbox().then((probe) => {
      const mode = containmentChoice(readSettings()).sandbox;
      statusBar.setContainment(containmentLine(probe, mode), probe.kind === 'none' && mode === 'auto');
    });
  context.subscriptions.push(
    log,
    diagnostics,
    tree,
    statusBar,
    testResults,
    tests,
    vscode.window.createTreeView('verdict.runs', { treeDataProvider: tree, showCollapseAll: true }),
    vscode.workspace.registerTextDocumentContentProvider(GIT_SCHEME, new GitContentProvider()),
    vscode.workspace.registerTextDocumentContentProvider(DOCTOR_SCHEME, doctorReports),
    // Each task's expected cost over its key (forecast.ts); the provider answers nothing for other JSON files.
    vscode.languages.registerCodeLensProvider([{ language: 'json' }, { language: 'jsonc' }], lenses),
    lenses,
    // A run's attempts add to the history the lenses read: they are asked again once the eval log grew.
    tree.onDidChangeTreeData(() => lenses.refreshIfLogChanged()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('verdict')) return;
      diagnostics.refreshAll();
      tree.setHome(resolveHome(readSettings().home));
      void pool.follow(readSettings().poolUrl ?? null);
      showContainment();
    }),
    taskLogs,
    vscode.workspace.registerTextDocumentContentProvider(TASK_LOG_SCHEME, taskLogs),
    ...registerCommands({ log, diagnostics, tree, launcher, taskLogs }),
    ...registerDashboard(context, { log, pool }),
    ...registerMcpProvider(vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath, String(context.extension.packageJSON.version ?? ''), log),
    launcher,
    { dispose: () => void pool.close() },
  );
  // `verdict` in the integrated terminal: a launcher of the bundled CLI in the extension's storage, first on the PATH
  // of every terminal opened from now on (the terminal environment API; the user's shell files are never written).
  const cliPath = vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath;
  let shim: string | null = null;
  try {
    shim = writeCliShim(path.join(context.globalStorageUri.fsPath, 'bin'), cliPath, nodeCommand());
    context.environmentVariableCollection.description = 'Puts the `verdict` command (the CLI bundled with the extension) on the PATH';
    context.environmentVariableCollection.prepend('PATH', `${path.dirname(shim)}${path.delimiter}`);
  } catch (e) {
    log.warn(`could not put \`verdict\` on the terminal's PATH: ${(e as Error).message}`);
  }
  context.subscriptions.push(
    vscode.commands.registerCommand('verdict.copyCliPath', async () => {
      if (!shim) return refuseCopy();
      await vscode.env.clipboard.writeText(shim);
      void vscode.window.showInformationMessage(`Verdict: copied ${shim} — run it from any shell, or link it into a folder on your PATH`);
      return shim;
    }),
  );
  const refuseCopy = () => {
    void vscode.window.showErrorMessage('Verdict: the `verdict` launcher could not be written; see Output → Verdict');
    return undefined;
  };
  // Runs whose orchestrator died are reconciled on every start (after activation, off its critical path).
  setTimeout(() => {
    showContainment();
    void reconcileDeadRuns(resolveHome(readSettings().home), editorEngines(log), WORKFLOW_SECTIONS).then((reports) => {
      for (const r of reports)
        log.warn(
          `reconciled run ${r.runId} (${r.runName}): its orchestrator died; ${r.interrupted.length} task(s) INTERRUPTED, ${r.killed.length} orphaned worker group(s) killed${r.killedInits.length ? `, ${r.killedInits.length} sandbox(es) that outlived it killed` : ''}`,
        );
      if (reports.length) tree.refresh();
    });
  }, 0);
  const activationMs = performance.now() - t0;
  return {
    runManifest: (file, options = {}) => launcher.run(file, options),
    forecast: (file) => runForecast(file, log),
    lint: (file) =>
      lintManifestFile(file, {
        engines: editorEngines(log),
        allowFullAccess: readSettings().allowFullAccess,
        trusted: vscode.workspace.isTrusted,
        route: readSettings().route,
      }),
    runs: () => {
      tree.refresh();
      return tree.runs();
    },
    runsView: { getChildren: (node) => tree.getChildren(node), getTreeItem: (node) => tree.getTreeItem(node) },
    testExplorer: {
      items: () => {
        tree.refresh();
        return testResults.items();
      },
      results: () => testResults.results(),
    },
    activationMs,
  };
}

export function deactivate(): void {
  // every disposable is in context.subscriptions
}
