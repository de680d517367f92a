/**
 * The manifest linter: everything wrong with a manifest, or merely risky, as findings with a rule id, a
 * severity, a message saying why and how to fix it, the exact range, and a quick fix where one is mechanical.
 * The loader's problems come first (load.ts: syntax, schema, keys, engines); then, whenever the text is valid
 * JSONC, the rules in ./rules read the tree (also when the schema failed: each rule skips values of the wrong
 * type, so a half-typed manifest still gets every finding that can be made). Pure: no vscode; the only outside
 * call is `git check-ignore` (deliverable-lost, worktree mode), made only for a trusted workspace.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { findNodeAtLocation, type Node } from 'jsonc-parser';
import { parseManifest, type ParsedText } from './load';
import { LineIndex } from './positions';
import type { Finding, RuleId } from './findings';
import type { ManifestProblem, ProblemCode } from './types';
import { lintDocument, type LintContext, type LintDocument, type Rule } from './rules/document';
import { placeOf } from './rules/task-paths';
import { checkCannotFail } from './rules/check-cannot-fail';
import { checkSilent } from './rules/check-silent';
import { checkPipefail } from './rules/check-pipefail';
import { hardCodedPort } from './rules/hard-coded-port';
import { workerCommits } from './rules/worker-commits';
import { underspecifiedSpec } from './rules/underspecified-spec';
import { specTooLong } from './rules/spec-too-long';
import { testsProtected } from './rules/tests-protected';
import { deliverableLost } from './rules/deliverable-lost';
import { writeCollision } from './rules/write-collision';
import { serialFanOut } from './rules/serial-fan-out';
import { subscriptionUncapped } from './rules/subscription-uncapped';
import { budgetForecast } from './rules/budget-forecast';
import { missingExpectFiles, missingTaskType, missingVerified } from './rules/missing-fields';
import { modelNotRoutable } from './rules/model-routing';
import { fullAccessNotEnabled } from './rules/full-access';
import { selfReview } from './rules/self-review';
import { allowPathsRule, depsNotAllowed } from './rules/guard-settings';
import { sparseOutside } from './rules/sparse-cone';
import { engineNotInstalled } from './rules/engine-installed';
import { routeRule } from './rules/route';
import { checkFileMissing } from './rules/check-files';
import { sectionEngines, type WorkflowSection } from './sections';

export type { LintContext } from './rules/document';

/**
 * What lint is told beyond the rules' context: every workflow's section, and whether the manifest's folder may make
 * anything run. The rules' `sectionEngines` lint derives from `sections`.
 */
export interface LintOptions extends Omit<LintContext, 'sectionEngines'> {
  /**
   * Every workflow's section (run/workflows/index.ts WORKFLOW_SECTIONS, handed in by the caller: ParseOptions.sections):
   * the loader's problems, the engines each names, and the lint rules of each workflow, run with lint's own.
   */
  sections: readonly WorkflowSection[];
  /**
   * The workspace is trusted (VS Code Workspace Trust); absent means true, as for the CLI, which the user ran on
   * their own files. False: lint starts no process, because any git command in a foreign repository can run a
   * program its config names; the rule part that needs git (deliverable-lost's .gitignore check) is skipped and
   * one info finding says so.
   */
  trusted?: boolean;
  /** Keys of tasks outside the text that its tasks join (a planner's generated file: the run's); see ParseOptions. */
  existingKeys?: ReadonlySet<string>;
  /** The config file's `route` block, for `engine: "auto"` in a manifest without one (ParseOptions.route). */
  route?: Record<string, unknown> | null;
}

/** The rules run on every parsed manifest, with each workflow's own (LintOptions.sections), in no particular order (findings are sorted afterwards). */
const RULES: Rule[] = [
  checkCannotFail,
  checkSilent,
  checkPipefail,
  hardCodedPort,
  workerCommits,
  underspecifiedSpec,
  specTooLong,
  testsProtected,
  deliverableLost,
  writeCollision,
  serialFanOut,
  subscriptionUncapped,
  budgetForecast,
  missingVerified,
  missingTaskType,
  missingExpectFiles,
  modelNotRoutable,
  fullAccessNotEnabled,
  selfReview,
  allowPathsRule,
  depsNotAllowed,
  sparseOutside,
  engineNotInstalled,
  routeRule,
  checkFileMissing,
];

/** The rule each loader problem is reported under. */
const RULE_OF_PROBLEM: Record<ProblemCode, RuleId> = {
  syntax: 'invalid-manifest',
  schema: 'invalid-manifest',
  'duplicate-property': 'invalid-manifest',
  'engine-args': 'invalid-manifest',
  unreadable: 'invalid-manifest',
  'duplicate-key': 'duplicate-key',
  'unsafe-key': 'unsafe-key',
  'unknown-engine': 'unknown-engine',
  'unknown-field': 'unknown-field',
  'task-graph': 'task-graph',
  repeat: 'repeat',
  generate: 'generate',
  inputs: 'inputs',
  validate: 'validate',
  council: 'council',
  critique: 'critique',
  phases: 'phases',
  suite: 'suite',
};

/**
 * Lints manifest text (JSONC). Never throws for any text: bad input yields `invalid-manifest` findings at the
 * right place plus whatever the rules can still tell.
 * @param text the manifest as in the editor (need not be saved)
 * @param file its absolute path: named in findings; relative `workdir`/`repo` resolve against its folder
 * @param ctx the engines that exist, the user's full-access choice and whether the workspace is trusted (LintOptions)
 * @returns findings sorted by position (offset, then rule id); findings without a range first
 */
export async function lintManifestText(text: string, file: string, ctx: LintOptions): Promise<Finding[]> {
  return lintParsed(
    {
      ...parseManifest(text, file, {
        sections: ctx.sections,
        engines: new Set(ctx.engines.keys()),
        existingKeys: ctx.existingKeys,
        problemsOnly: true,
        route: ctx.route ?? null,
      }),
      text,
      file,
    },
    ctx,
  );
}

/**
 * Lints a manifest as one parse left it (manifest/load.ts loadManifest's `parsed`, parsed with the same engines as
 * `ctx` names): as lintManifestText, without parsing the text again.
 */
export async function lintParsed(parsed: ParsedText, ctx: LintOptions): Promise<Finding[]> {
  const { problems, tree, value, text, file } = parsed;
  const index = new LineIndex(text);
  const findings = problems.map((p) => problemFinding(p, index, tree ? (i) => taskKeyAt(tree, i) : () => null));
  if (tree) {
    const doc = lintDocument(text, file, tree, index, value);
    const untrusted = ctx.trusted === false && ctx.useGit !== false;
    const rulesCtx: LintContext = { ...ctx, ...(untrusted ? { useGit: false } : {}), sectionEngines: (t) => sectionEngines(t, ctx.sections) };
    for (const rule of [...RULES, ...ctx.sections.flatMap((s) => s.lintRules ?? [])]) {
      for (const r of await rule(doc, rulesCtx)) findings.push({ ...r, file });
    }
    if (untrusted && needsGit(doc)) findings.push(gitSkipped(doc, tree, index, file));
  }
  return findings.sort(byPosition);
}

/**
 * Reads and lints a manifest file.
 * @param file path of the manifest (resolved against the cwd)
 * @returns as lintManifestText; an unreadable file is one `invalid-manifest` error with a null range
 */
export async function lintManifestFile(file: string, ctx: LintOptions): Promise<Finding[]> {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = await fs.readFile(abs, 'utf8');
  } catch (e) {
    return [
      { rule: 'invalid-manifest', severity: 'error', message: `cannot read the manifest: ${(e as Error).message}`, file: abs, range: null, taskKey: null },
    ];
  }
  return lintManifestText(text, abs, ctx);
}

/** `file:line:column: severity [rule] (task) message`, the form terminals and editors turn into links. */
export function formatFinding(f: Finding): string {
  const where = f.range ? `${f.file}:${f.range.start.line}:${f.range.start.column}` : f.file;
  return `${where}: ${f.severity} [${f.rule}]${f.taskKey ? ` (${f.taskKey})` : ''} ${f.message}`;
}

/**
 * What lint decides about starting a run: the one rule every entry point applies (`verdict run`, `verdict resume` and
 * `verdict rerun` of a run that ended, the MCP tools start_run and control_run, VS Code's Run Manifest, Resume Run,
 * Rerun Task, Test Explorer and API runs). An error-level finding refuses the start unless the user forced it
 * (`--force`, MCP `force: true`); a forced start records `forced: true` in state.json and in every eval row.
 */
export interface StartGate {
  /** The error-level findings, in position order (each refuses the start on its own). */
  errors: Finding[];
  /** Errors were found and the start was not forced: nothing may start. */
  refused: boolean;
  /** Errors were found and the start was forced: the run goes on and records `forced: true`. */
  forced: boolean;
}

/**
 * Decides a start from its manifest's lint findings (see {@link StartGate}). Warnings and notes never refuse; `force`
 * without an error forces nothing (the run is not marked).
 * @param findings every finding of the manifest that would run (lintManifestFile, or run/frozen-manifest.ts
 *   lintFrozenManifest for a resume)
 * @param force the user's `--force` / `force: true`
 */
export function startGate(findings: readonly Finding[], force: boolean): StartGate {
  const errors = findings.filter((f) => f.severity === 'error');
  return { errors, refused: errors.length > 0 && !force, forced: errors.length > 0 && force };
}

/**
 * The lines that say a start was refused (or forced): a header naming `what` (e.g. `cannot start /a/m.swarm.json`),
 * the count and, when refused, how to go on (`how.fix`, default: fix and lint again; `how.force`, default `--force`,
 * or the MCP's `force: true`), then one `file:line:column: error [rule] (task) message` per error, indented.
 */
export function startGateLines(gate: StartGate, what: string, how: { force?: string; fix?: string } = {}): string[] {
  const n = `${gate.errors.length} lint error${gate.errors.length === 1 ? '' : 's'}`;
  const head = gate.refused
    ? `${what}: ${n} (${how.fix ?? 'fix them and lint again'}; ${how.force ?? '--force'} starts it anyway, recorded as forced: true in the run and every eval row):`
    : `${what} despite ${n} (recorded as forced: true in the run and every eval row):`;
  return [head, ...gate.errors.map((f) => `  ${formatFinding(f)}`)];
}

/** deliverable-lost would ask git: worktree mode and an expected file inside the task dir. */
function needsGit(doc: LintDocument): boolean {
  return doc.worktrees && doc.tasks.some((t) => (t.expectFiles ?? []).some((f) => placeOf(f.value) === 'inside'));
}

/** The info finding that says the .gitignore check was skipped, on the `worktrees` value. */
function gitSkipped(doc: LintDocument, tree: Node, index: LineIndex, file: string): Finding {
  const node = findNodeAtLocation(tree, ['worktrees']);
  return {
    rule: 'deliverable-lost',
    severity: 'info',
    message: `Not checked whether ${doc.repo}'s .gitignore drops expected files: this workspace is untrusted, and any git command there could run a program the repository's config names. Trust the workspace to check.`,
    file,
    range: node ? index.range(node.offset, node.length) : index.range(0, 0),
    taskKey: null,
  };
}

function problemFinding(p: ManifestProblem, index: LineIndex, keyOf: (taskIndex: number) => string | null): Finding {
  const taskIndex = /^tasks\[(\d+)\]/.exec(p.path)?.[1];
  const message = p.code === 'unknown-field' ? `${p.message}: check its spelling, or remove it.` : p.message;
  return {
    rule: RULE_OF_PROBLEM[p.code ?? 'schema'],
    severity: p.severity,
    message: p.path.startsWith('(') ? message : `${p.path}: ${message}`,
    file: p.file,
    range: p.range ?? index.range(0, 0),
    taskKey: taskIndex === undefined ? null : keyOf(Number(taskIndex)),
  };
}

function taskKeyAt(tree: Node, i: number): string | null {
  const key = findNodeAtLocation(tree, ['tasks', i, 'key'])?.value as unknown;
  return typeof key === 'string' ? key : null;
}

function byPosition(a: Finding, b: Finding): number {
  return (a.range?.offset ?? -1) - (b.range?.offset ?? -1) || (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0);
}
