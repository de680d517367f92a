/**
 * The manifest linter: everything wrong with a manifest, or merely risky, as findings with a rule id, a
 * severity, a message saying why and how to fix it, the exact range, and a quick fix where one is mechanical.
 * The loader's problems come first (load.ts: syntax, schema, keys, engines); then, whenever the text is valid
 * JSONC, the rules in ./rules read the tree (also when the schema failed: each rule skips values of the wrong
 * type, so a half-typed manifest still gets every finding that can be made). Pure: no vscode; the only outside
 * call is `git check-ignore` (deliverable-lost, worktree mode).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { findNodeAtLocation, type Node } from 'jsonc-parser';
import { parseManifest } from './load';
import { LineIndex } from './positions';
import type { Finding, RuleId } from './findings';
import type { ManifestProblem, ProblemCode } from './types';
import { lintDocument, type LintContext, type Rule } from './rules/document';
import { checkCannotFail } from './rules/check-cannot-fail';
import { checkSilent } from './rules/check-silent';
import { hardCodedPort } from './rules/hard-coded-port';
import { workerCommits } from './rules/worker-commits';
import { underspecifiedSpec } from './rules/underspecified-spec';
import { deliverableLost } from './rules/deliverable-lost';
import { writeCollision } from './rules/write-collision';
import { serialFanOut } from './rules/serial-fan-out';
import { missingExpectFiles, missingTaskType, missingVerified } from './rules/missing-fields';
import { modelNotRoutable } from './rules/model-routing';
import { fullAccessNotEnabled } from './rules/full-access';

export type { LintContext } from './rules/document';

/** The rules run on a parsed manifest, in no particular order (findings are sorted afterwards). */
const RULES: Rule[] = [
  checkCannotFail,
  checkSilent,
  hardCodedPort,
  workerCommits,
  underspecifiedSpec,
  deliverableLost,
  writeCollision,
  serialFanOut,
  missingVerified,
  missingTaskType,
  missingExpectFiles,
  modelNotRoutable,
  fullAccessNotEnabled,
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
};

/**
 * Lints manifest text (JSONC). Never throws for any text: bad input yields `invalid-manifest` findings at the
 * right place plus whatever the rules can still tell.
 * @param text the manifest as in the editor (need not be saved)
 * @param file its absolute path: named in findings; relative `workdir`/`repo` resolve against its folder
 * @param ctx the engines that exist and the user's full-access choice (see LintContext)
 * @returns findings sorted by position (offset, then rule id); findings without a range first
 */
export async function lintManifestText(text: string, file: string, ctx: LintContext): Promise<Finding[]> {
  const { problems, tree } = parseManifest(text, file, { engines: new Set(ctx.engines.keys()) });
  const index = new LineIndex(text);
  const findings = problems.map((p) => problemFinding(p, index, tree ? (i) => taskKeyAt(tree, i) : () => null));
  if (tree) {
    const doc = lintDocument(text, file, tree, index);
    for (const rule of RULES) {
      for (const r of await rule(doc, ctx)) findings.push({ ...r, file });
    }
  }
  return findings.sort(byPosition);
}

/**
 * Reads and lints a manifest file.
 * @param file path of the manifest (resolved against the cwd)
 * @returns as lintManifestText; an unreadable file is one `invalid-manifest` error with a null range
 */
export async function lintManifestFile(file: string, ctx: LintContext): Promise<Finding[]> {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = await fs.readFile(abs, 'utf8');
  } catch (e) {
    return [{ rule: 'invalid-manifest', severity: 'error', message: `cannot read the manifest: ${(e as Error).message}`, file: abs, range: null, taskKey: null }];
  }
  return lintManifestText(text, abs, ctx);
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
