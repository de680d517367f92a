import * as vscode from 'vscode';
import type { RunInfo } from '../core/live/registry';

/**
 * Status-bar item: live runs and running tasks on this machine; a dead orchestrator shows as a warning. Its tooltip
 * always ends with the containment line (the same as `verdict doctor`'s), known once the sandbox probe has answered;
 * while no run is live the item stays visible only to carry that line.
 */
export class RunsStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('verdict.runs', vscode.StatusBarAlignment.Left, 20);
  private runs: RunInfo[] = [];
  private containment: { line: string; refused: boolean } | null = null;
  private disposed = false;

  constructor() {
    this.item.name = 'Verdict runs';
    this.item.command = 'verdict.runs.focus';
  }

  /** Redraws from the latest runs. */
  update(runs: RunInfo[]): void {
    this.runs = runs;
    this.render();
  }

  /**
   * Sets the containment line (see containmentLine); `refused` when runs with the current settings would refuse to
   * start (no sandbox here, and the sandbox is not turned off): the item then warns even with no run live.
   */
  setContainment(line: string, refused: boolean): void {
    this.containment = { line, refused };
    this.render();
  }

  private render(): void {
    if (this.disposed) return; // the sandbox probe may answer after deactivation
    const live = this.runs.filter((r) => r.liveness === 'running');
    const died = this.runs.filter((r) => r.liveness === 'orchestrator-died');
    const lines = [
      ...live.map((r) => `${r.state.runName}: ${r.counts.passed}/${r.counts.total} passed, ${r.counts.active} running`),
      ...died.map((r) => `${r.state.runName}: orchestrator died`),
    ];
    if (this.containment) lines.push(this.containment.line);
    if (!lines.length) {
      this.item.hide();
      return;
    }
    const active = live.reduce((n, r) => n + r.counts.active, 0);
    const refused = this.containment?.refused === true;
    this.item.text =
      live.length || died.length
        ? `$(beaker) ${live.length} live · ${active} running${died.length ? ` · $(warning) ${died.length} died` : ''}${refused ? ' · $(warning) no sandbox' : ''}`
        : `$(beaker) Verdict${refused ? ' · $(warning) no sandbox' : ''}`;
    this.item.tooltip = lines.join('\n');
    this.item.backgroundColor = died.length || refused ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }

  /** The text shown, for tests. */
  get text(): string {
    return this.item.text;
  }

  /** The tooltip shown, for tests. */
  get tooltip(): string {
    return typeof this.item.tooltip === 'string' ? this.item.tooltip : (this.item.tooltip?.value ?? '');
  }

  dispose(): void {
    this.disposed = true;
    this.item.dispose();
  }
}
