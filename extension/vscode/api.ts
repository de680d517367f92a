import type { Finding } from '../core/manifest/findings';
import type { RunInfo } from '../core/live/registry';
import type { RunSummary } from '../core/run/runner';
import type { LaunchEvent } from './launcher';
import type { RunForecast } from './forecast';
import type { RunsNode } from './runs-tree';
import type { PublishedItem, PublishedResult } from './run-test-results';

/** Options of {@link VerdictApi.runManifest}. */
export interface ApiRunOptions {
  /** Run only these task keys. */
  only?: string[];
  maxParallel?: number;
  identity?: string;
  /** Run every check on the untouched tree first; a task whose check already passes is SKIPPED. */
  baseline?: boolean;
  /**
   * Told as the run goes (from its state.json): its start, and each finished attempt with its verdict, whether
   * another attempt follows (`willRetry`) and the task branch — what the progress notification shows.
   */
  onEvent?: (e: LaunchEvent) => void;
}

/**
 * What `activate()` returns, for other extensions and for tests:
 * `vscode.extensions.getExtension('verdict-dev.verdict').exports`.
 */
export interface VerdictApi {
  /**
   * Runs a manifest (absolute path) like the Run Manifest command, without UI: starts `verdict run` as a detached
   * process (it outlives this window) and resolves with its summary once its state.json is final (summary read from
   * state.json and the eval rows; `recordErrors` is always empty, the orchestrator's log has them).
   * @throws UntrustedWorkspaceError in an untrusted workspace; ManifestError (file:line:column) for a bad manifest;
   *   LaunchError when it cannot start (missing engine binary, not a git repository…: the orchestrator's log tail)
   */
  runManifest(path: string, options?: ApiRunOptions): Promise<RunSummary>;
  /**
   * What Run Manifest shows before a run (forecast.ts runForecast, `verdict plan`'s core): the forecast of the saved
   * manifest, its total line, the `verdict.confirmAboveUsd` threshold and whether Run Manifest asks first.
   * @throws ManifestError when the manifest does not load
   */
  forecast(path: string): Promise<RunForecast>;
  /** Lints a manifest file; never throws (an unreadable file is one `invalid-manifest` finding). */
  lint(path: string): Promise<Finding[]>;
  /** Every run under VERDICT_HOME as the runs view last read it, live first. */
  runs(): RunInfo[];
  /** The runs view's data, exactly what the tree shows: children of a node (roots when omitted) and their items. */
  readonly runsView: {
    getChildren(node?: RunsNode): RunsNode[] | Promise<RunsNode[]>;
    getTreeItem(node: RunsNode): import('vscode').TreeItem;
  };
  /**
   * What the Test Explorer shows of the runs under VERDICT_HOME: the items under "Verdict runs" (runs → tasks, read
   * fresh) and every result published since activation (attempts passed, failed with their message and log, skipped).
   */
  readonly testExplorer: {
    items(): PublishedItem[];
    results(): readonly PublishedResult[];
  };
  /** Time spent inside activate(), ms (measured with performance.now). */
  readonly activationMs: number;
}
