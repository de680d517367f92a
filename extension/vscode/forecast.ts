/**
 * The forecast in the editor, from the same core as `verdict plan` (core/scoreboard/plan.ts): Run Manifest's total and
 * its confirmation above `verdict.confirmAboveUsd`, and each task's expected cost in a CodeLens over its `key` in the
 * manifest editor ("no history" where there is none).
 */
import fs from 'node:fs';
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import * as vscode from 'vscode';
import { evalLogPath, resolveHome } from '../core/config/home';
import {
  entryForecasts,
  entryForecastText,
  forecastManifest,
  forecastText,
  forecastTotalLine,
  confirmationReason,
  type ManifestForecast,
} from '../core/scoreboard/plan';
import { isManifestDocument } from './diagnostics';
import { editorEngines } from './engines';
import { readSettings } from './settings';
import { WORKFLOW_SECTIONS } from '../core/run/workflows';

/** What Run Manifest shows and decides before it starts a run. */
export interface RunForecast {
  forecast: ManifestForecast;
  /** forecastTotalLine: `forecast: $0.40 expected (p50), $1.20 at p90…`. */
  line: string;
  /** The threshold in force (`verdict.confirmAboveUsd`), USD. */
  thresholdUsd: number;
  /**
   * True when the user is asked before the run starts: the p90 total is above the threshold, or the cost is unknown
   * (a task without history) and no budget_usd at or below the threshold caps it (plan.ts confirmationReason).
   */
  confirm: boolean;
  /** Why it asks, the question's end (`above your $1 threshold (verdict.confirmAboveUsd)`); null when it does not. */
  reason: string | null;
}

/**
 * The forecast of the manifest file `file` (as saved) from the eval log under the editor's home, and whether Run
 * Manifest must ask before starting it.
 * @throws ManifestError when the manifest does not load
 */
export async function runForecast(file: string, log: vscode.LogOutputChannel): Promise<RunForecast> {
  const s = readSettings();
  const forecast = await forecastManifest(file, resolveHome(s.home), editorEngines(log), s.route, WORKFLOW_SECTIONS);
  const reason = confirmationReason(forecast, s.confirmAboveUsd);
  return { forecast, line: forecastTotalLine(forecast), thresholdUsd: s.confirmAboveUsd, confirm: reason !== null, reason };
}

/** The CodeLens over each task's key in a manifest editor: its expected cost from the eval log, or "no history". */
export class ForecastLensProvider implements vscode.CodeLensProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  /** The eval log's size when the lenses were last told to refresh, bytes (-1: none yet). */
  private logSize = -1;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  /**
   * Asks VS Code for new lenses when the eval log grew (an attempt ended, so the history the forecast reads changed);
   * cheap enough to call whenever the runs view changes (one stat).
   */
  refreshIfLogChanged(): void {
    const size = fs.statSync(evalLogPath(resolveHome(readSettings().home)), { throwIfNoEntry: false })?.size ?? 0;
    if (size === this.logSize) return;
    const first = this.logSize === -1;
    this.logSize = size;
    if (!first) this.changed.fire();
  }

  dispose(): void {
    this.changed.dispose();
  }

  async provideCodeLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (!isManifestDocument(doc)) return [];
    const text = doc.getText();
    const s = readSettings();
    let loaded: Awaited<ReturnType<typeof forecastText>>;
    try {
      // With the config's route, as Run Manifest loads it: an engine "auto" manifest without its own route needs it.
      loaded = await forecastText(text, doc.uri.fsPath, resolveHome(s.home), editorEngines(this.log), s.route, WORKFLOW_SECTIONS);
    } catch (e) {
      this.log.warn(`forecast of ${doc.uri.fsPath}: ${(e as Error).message}`);
      return [];
    }
    if (!loaded) return [];
    const { manifest, forecast: f } = loaded;
    const tree = parseTree(text);
    const raw = (manifest.raw as { tasks?: unknown[] }).tasks ?? [];
    const keys = raw.map((t) => (t && typeof t === 'object' && typeof (t as { key?: unknown }).key === 'string' ? (t as { key: string }).key : null));
    const byEntry = entryForecasts(
      f,
      keys.filter((k): k is string => k !== null),
    );
    const lenses: vscode.CodeLens[] = [];
    keys.forEach((key, i) => {
      const node = key !== null && tree ? findNodeAtLocation(tree, ['tasks', i, 'key']) : undefined;
      if (key === null || !node) return;
      const range = new vscode.Range(doc.positionAt(node.offset), doc.positionAt(node.offset + node.length));
      lenses.push(new vscode.CodeLens(range, { title: `Verdict forecast: ${entryForecastText(byEntry.get(key) ?? [])}`, command: '' }));
    });
    return lenses;
  }
}
