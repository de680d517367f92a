import * as vscode from 'vscode';
import { resolveHome } from '../../core/config/home';
import { readSettings } from '../settings';
import type { PoolFeed } from '../../core/dashboard/source';
import { DASHBOARD_VIEW_TYPE, DashboardPanel } from './panel';

/**
 * The dashboard's part of the extension: the `verdict.openDashboard` and `verdict.showScoreboard` commands, and
 * the serializer that restores the panel after a window reload (the page then says `ready` and gets a fresh
 * snapshot; only its navigation state was kept). One panel at a time, on the records folder of the `verdict.home`
 * setting, with the pool of `verdict.pool` (when set). Returns what to dispose with the extension.
 */
export function registerDashboard(context: vscode.ExtensionContext, { log, pool }: { log: vscode.LogOutputChannel; pool?: PoolFeed }): vscode.Disposable[] {
  const deps = { log, home: () => resolveHome(readSettings().home), pool };
  let current: DashboardPanel | undefined;
  const attach = (panel: vscode.WebviewPanel) => {
    current = new DashboardPanel(panel, context.extensionUri, deps, () => {
      current = undefined;
    });
    return current;
  };
  const open = (view?: 'live' | 'library' | 'scoreboard') => {
    if (current) return current.reveal(view);
    const panel = vscode.window.createWebviewPanel(DASHBOARD_VIEW_TYPE, 'Verdict', vscode.ViewColumn.Active, { retainContextWhenHidden: false });
    attach(panel).reveal(view);
  };
  return [
    vscode.commands.registerCommand('verdict.openDashboard', () => open()),
    vscode.commands.registerCommand('verdict.showScoreboard', () => open('scoreboard')),
    vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, {
      deserializeWebviewPanel: async (panel) => {
        current?.dispose();
        attach(panel);
      },
    }),
    // A changed `verdict.home` moves the open panel to that records folder (it kept showing the old one).
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('verdict.home') && current?.follow()) log.info(`dashboard: now shows ${current.home}`);
    }),
    { dispose: () => current?.dispose() },
  ];
}
