import type { SourceRange } from './positions';

/**
 * Stable ids of the manifest lint rules. `invalid-manifest` carries the loader's own errors (syntax, schema,
 * duplicate keys, unknown engines) so one list holds everything wrong with a file.
 */
export type RuleId =
  | 'invalid-manifest'
  | 'unknown-field'
  | 'check-cannot-fail'
  | 'check-silent'
  | 'check-pipefail'
  | 'worker-commits'
  | 'deliverable-lost'
  | 'serial-fan-out'
  | 'subscription-uncapped'
  | 'budget-forecast'
  | 'write-collision'
  | 'underspecified-spec'
  | 'spec-too-long'
  | 'tests-protected'
  | 'missing-verified'
  | 'missing-task-type'
  | 'missing-expect-files'
  | 'hard-coded-port'
  | 'unknown-engine'
  | 'model-not-routable'
  | 'full-access-not-enabled'
  | 'duplicate-key'
  | 'unsafe-key'
  | 'task-graph'
  | 'repeat'
  | 'self-review'
  | 'allow-paths'
  | 'deps-not-allowed'
  | 'sparse-outside'
  | 'generate'
  | 'inputs'
  | 'validate'
  | 'council'
  | 'critique'
  | 'phases'
  | 'phases-red-off'
  | 'engine-not-installed'
  | 'check-file-missing'
  | 'suite'
  | 'route';

/** An edit that fixes a finding: replace `range` of the manifest text with `newText` (already JSON-escaped). */
export interface QuickFix {
  title: string;
  range: SourceRange;
  newText: string;
}

/** One problem in a manifest: which rule, how bad, why it matters and how to fix it, and exactly where. */
export interface Finding {
  rule: RuleId;
  severity: 'error' | 'warning' | 'info';
  /** Says why it matters and how to fix it. */
  message: string;
  /** Absolute path of the manifest. */
  file: string;
  /** The offending value's range (line/column 1-based); null only when the file could not be read. */
  range: SourceRange | null;
  /** The task the finding is about; null for run-level findings. */
  taskKey: string | null;
  /** Present for the fixable rules. */
  fix?: QuickFix;
}
