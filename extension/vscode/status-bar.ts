import * as vscode from 'vscode';
import type { RunInfo } from '../core/live/registry';

/** Status-bar item: live runs and running tasks on this machine; a dead orchestrator shows as a warning. */
export class RunsStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('verdict.runs', vscode.StatusBarAlignment.Left, 20);

  constructor() {
    this.item.name = 'Verdict runs';
    this.item.command = 'verdict.runs.focus';
  }

  /** Redraws from the latest runs. */
  update(runs: RunInfo[]): void {
    const live = runs.filter((r) => r.liveness === 'running');
    const died = runs.filter((r) => r.liveness === 'orchestrator-died');
    if (!live.length && !died.length) {
      this.item.hide();
      return;
    }
    const active = live.reduce((n, r) => n + r.counts.active, 0);
    this.item.text = `$(beaker) ${live.length} live · ${active} running${died.length ? ` · $(warning) ${died.length} died` : ''}`;
    this.item.tooltip = [...live.map((r) => `${r.state.runName}: ${r.counts.passed}/${r.counts.total} passed, ${r.counts.active} running`), ...died.map((r) => `${r.state.runName}: orchestrator died`)].join('\n');
    this.item.backgroundColor = died.length ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }

  /** The text shown, for tests. */
  get text(): string {
    return this.item.text;
  }

  dispose(): void {
    this.item.dispose();
  }
}
