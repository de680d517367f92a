/** Builders and assertions shared by the lint tests (not a test file itself: no `.test.ts`). */
import assert from 'node:assert/strict';
import { builtinEngines } from '../../engines/index';
import { type LintContext } from '../../extension/core/manifest/lint';
import type { Finding, RuleId } from '../../extension/core/manifest/findings';
import { lintManifestText } from '../../extension/core/run/manifest';
import { sectionEngines, type WorkflowSection } from '../../extension/core/manifest/sections';
import { WORKFLOW_SECTIONS } from '../../extension/core/run/workflows';

/** Where test manifests claim to live; relative workdir/repo resolve against its folder. */
export const FILE = '/work/lint-tests/team.swarm.json';

/**
 * Built-in engines, git off (tests that need git turn it on), every workflow's section: a rule's context, and lint's
 * options (LintOptions, whose `sections` lint turns into the rules' `sectionEngines`).
 */
export const ctx: LintContext & { sections: readonly WorkflowSection[] } = {
  engines: builtinEngines(),
  useGit: false,
  sections: WORKFLOW_SECTIONS,
  sectionEngines: (t) => sectionEngines(t, WORKFLOW_SECTIONS),
};

/** A spec long enough (≥ 80 characters) that underspecified-spec stays quiet. */
export const SPEC = 'Implement parseCsv(text: string): string[][] in csv.ts, handling quoted fields, escaped quotes and CRLF endings.';

/**
 * A manifest with one task per line: task i (0-based) is on line 4 + i and starts at column 5, so expected
 * columns are 5 + the offset inside the task's JSON. Run-level fields go on line 2.
 */
export function manifest(tasks: Record<string, unknown>[], run: Record<string, unknown> = { run_name: 't' }): string {
  const runLine = JSON.stringify(run).slice(1, -1);
  return `{\n  ${runLine},\n  "tasks": [\n${tasks.map((t) => `    ${JSON.stringify(t)}`).join(',\n')}\n  ]\n}\n`;
}

/** A complete, quiet task; `over` replaces or adds fields, `undefined` removes one. */
export function task(key: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  const t: Record<string, unknown> = {
    key,
    spec: SPEC,
    check: 'npm test',
    expect_files: ['csv.ts'],
    task_type: 'parser',
    verified: 'parseCsv passes its tests.',
    ...over,
  };
  for (const k of Object.keys(t)) if (t[k] === undefined) delete t[k];
  return t;
}

/** Lints `text` and keeps the findings of `rule`. */
export async function findingsOf(rule: RuleId, text: string, context: Partial<LintContext> = {}): Promise<Finding[]> {
  return (await lintManifestText(text, FILE, { ...ctx, ...context })).filter((f) => f.rule === rule);
}

/**
 * Asserts a single-line range exactly: starts at line:column (1-based) and covers `raw`, the text as written in
 * the file (JSON escapes included).
 */
export function assertRange(text: string, f: Finding | undefined, line: number, column: number, raw: string): void {
  assert.ok(f, 'expected a finding');
  assert.ok(f.range, 'expected a range');
  assert.equal(text.slice(f.range.offset, f.range.offset + f.range.length), raw);
  assert.deepEqual(f.range.start, { line, column });
  assert.deepEqual(f.range.end, { line, column: column + raw.length });
}

/** The text after applying a finding's quick fix. */
export function applyFix(text: string, f: Finding | undefined): string {
  assert.ok(f?.fix, 'expected a quick fix');
  return text.slice(0, f.fix.range.offset) + f.fix.newText + text.slice(f.fix.range.offset + f.fix.range.length);
}

/** Column (1-based) of `needle` (searched from `after`) in the JSON of task `t` as laid out by {@link manifest}. */
export function col(t: Record<string, unknown>, needle: string, after = ''): number {
  const json = JSON.stringify(t);
  const i = json.indexOf(needle, after ? json.indexOf(after) + after.length : 0);
  assert.ok(i >= 0, `${needle} not in ${json}`);
  return 5 + i;
}
