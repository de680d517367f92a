/**
 * A planner's generated tasks file (docs/workflows.md "Generated"), validated before any of its tasks joins the run:
 * a JSON array of tasks, checked with the manifest schema and every lint rule as a manifest whose `tasks` is that
 * array (positions are the file's own), then by the rules only a generated file has. The planner's file is written by
 * a worker, so it is hostile: it may not generate again, exceed `max_tasks`, use an engine the run did not start
 * with, set `full_access` or `engine_args` (either can switch an engine's own sandbox off), or turn the network on for
 * a planner that has none. Pure apart from reading nothing: the caller hands the text (bounded in size).
 */
import { getNodeValue, parseTree, type Node } from 'jsonc-parser';
import type { Finding } from '../../../manifest/findings';
import { lintManifestText, type LintOptions } from '../../../manifest/lint';
import { DEFAULT_ENGINE } from '../../../manifest/load';
import { LineIndex, rangeOfPath } from '../../../manifest/positions';
import type { TaskSpec } from '../../../manifest/types';
import { compiledCount, namedEngines, sectionEngines, type EngineRef, type WorkflowSection } from '../../../manifest/sections';

/** The largest generated tasks file read, bytes (1 MiB): a bigger one is refused before it is parsed. */
export const GENERATED_MAX_BYTES = 1024 * 1024;

/** What a generated file is checked against. */
export interface GeneratedContext {
  /** The planner task (its key, `generate` and `network`). */
  planner: TaskSpec;
  /** Every compiled task key the run has now: a generated key may not take one; `after` may name one. */
  existingKeys: ReadonlySet<string>;
  /** Engines generated tasks may use: those the run checked before it started (preflight). */
  allowedEngines: ReadonlySet<string>;
  /** Lint's context (the configured engines); git is never used on a generated file. */
  lint: LintOptions;
  /** The run is in worktree mode (lint rules read it). */
  worktrees: boolean;
}

/** The outcome: the tasks to add (raw, as the manifest holds tasks) when no finding is an error, and every finding. */
export interface GeneratedResult {
  /** The tasks, each with the planner added first to its `after` (and `network: false` when the planner has none); null on any error. */
  tasks: Record<string, unknown>[] | null;
  /** Findings with ranges and messages in the generated file's own terms (`[2].key`, its line and column). */
  findings: Finding[];
}

/**
 * Validates the text of a planner's generated tasks file.
 * @param text the file's contents (at most GENERATED_MAX_BYTES)
 * @param file its absolute path, named in findings
 */
export async function validateGenerated(text: string, file: string, ctx: GeneratedContext): Promise<GeneratedResult> {
  const index = new LineIndex(text);
  const at = (root: Node | undefined, path: (string | number)[]) => rangeOfPath(root, path, index) ?? index.range(0, 0);
  const finding = (severity: Finding['severity'], message: string, range = index.range(0, 0), taskKey: string | null = null): Finding => ({
    rule: 'generate',
    severity,
    message,
    file,
    range,
    taskKey,
  });

  const root = parseTree(text, [], { allowTrailingComma: true, disallowComments: false });
  if (root && root.type !== 'array') {
    return {
      tasks: null,
      findings: [finding('error', `the file must hold a JSON array of tasks, not ${root.type === 'object' ? 'an object' : `a ${root.type}`}`, at(root, []))],
    };
  }
  // The array linted as the `tasks` of a manifest written on the same first line, so only columns of line 1 shift.
  const prefix = `{"worktrees":${ctx.worktrees},"tasks":`;
  const lintText = `${prefix}${text}\n}`;
  const linted = await lintManifestText(lintText, file, { ...ctx.lint, useGit: false, existingKeys: ctx.existingKeys });
  const findings = linted.map((f): Finding => {
    const inFile =
      f.range && f.range.offset >= prefix.length ? index.range(Math.min(f.range.offset - prefix.length, text.length), f.range.length) : index.range(0, 0);
    // Quick fixes are dropped: their ranges are in the lint text, and nobody edits a generated file in place.
    return {
      rule: f.rule,
      severity: f.severity,
      file,
      taskKey: f.taskKey,
      range: inFile,
      message: f.message.replace(/^tasks: /, '(root): ').replace(/\btasks\[/g, '['),
    };
  });

  const tasks = root ? (root.children ?? []) : [];
  const data = tasks.map((n) => getNodeValue(n) as unknown);
  let workers = 0;
  data.forEach((t, i) => {
    if (!isObject(t)) return;
    const key = typeof t.key === 'string' ? t.key : null;
    const err = (path: (string | number)[], message: string) =>
      findings.push(finding('error', `[${i}]${path.length ? `.${path.join('.')}` : ''}: ${message}`, at(root, [i, ...path]), key));
    // What a workflow section compiles the task into counts whole (manifest/sections/index.ts compiledCount).
    const { tasks: n, what } = compiledCount(t, ctx.lint.sections);
    if (workers <= ctx.planner.generate!.maxTasks && workers + n > ctx.planner.generate!.maxTasks) {
      err(
        [],
        `the file holds more tasks than "max_tasks": ${ctx.planner.generate!.maxTasks} of ${ctx.planner.key} allows (this is task ${workers + 1}${n > 1 ? `, with its ${n} ${what}` : ''}; ${countWorkers(data, ctx.lint.sections)} in all); nothing is cut: write fewer tasks, or raise max_tasks`,
      );
    }
    workers += n;
    for (const [path, message] of [...loosenings(t, ctx.planner), ...foreignEngines(t, ctx.allowedEngines, ctx.lint.sections)]) err(path, message);
  });
  findings.sort((a, b) => (a.range?.offset ?? 0) - (b.range?.offset ?? 0));
  if (findings.some((f) => f.severity === 'error')) return { tasks: null, findings };
  const out = data.map((t) => {
    const task = { ...(t as Record<string, unknown>) };
    const after = Array.isArray(task.after) ? (task.after as string[]) : [];
    task.after = [ctx.planner.key, ...after.filter((k) => k !== ctx.planner.key)];
    if (ctx.planner.network === false) task.network = false;
    return task;
  });
  return { tasks: out, findings };
}

/** A problem of a generated task: the path within it (empty: the task) and what is wrong. */
type TaskProblem = [(string | number)[], string];

/**
 * What generated task `t` would loosen of what `planner` runs under: recursion, full_access, engine_args, network,
 * built-in guards, allow_deps, allow_paths, unprotected check inputs, a skipped review. In this order.
 */
function loosenings(t: Record<string, unknown>, planner: GeneratedContext['planner']): TaskProblem[] {
  const out: TaskProblem[] = [];
  if (t.generate !== undefined)
    out.push([['generate'], 'a generated task cannot generate tasks itself (no recursion); write its tasks into this file instead']);
  if (t.full_access === true) out.push([['full_access'], 'a generated task cannot have full_access: it would run without the sandbox the planner ran in']);
  if (t.engine_args !== undefined)
    out.push([['engine_args'], "a generated task cannot set engine_args: they can switch an engine's own sandbox or approvals off"]);
  if (planner.network === false && (t.network === true || t.network === 'host'))
    out.push([['network'], `${planner.key} runs without network, so the tasks it generates do too`]);
  if (planner.network !== 'host' && t.network === 'host')
    out.push([['network'], `a generated task cannot share the host's network ("host"): ${planner.key} did not`]);
  // What the run's manifest set to hold workers in, a generated task may not loosen (the run-level values apply to it).
  if (t.guard === false || (isObject(t.guard) && Object.values(t.guard).includes(false)))
    out.push([['guard'], 'a generated task cannot turn built-in guards off']);
  if (t.allow_deps !== undefined) out.push([['allow_deps'], "a generated task cannot allow dependencies; the run's allow_deps applies to it"]);
  if (t.allow_paths !== undefined && planner.allowPaths !== null)
    out.push([['allow_paths'], `a generated task cannot replace the allow_paths ${planner.key} works under`]);
  if (Array.isArray(t.protect) && (t.protect.length === 0 || t.protect.some((g) => typeof g === 'string' && g.startsWith('!'))))
    out.push([['protect'], 'a generated task can only add protected check inputs (no [] and no "!glob")']);
  if (t.review === false && planner.review !== null) out.push([['review'], `a generated task cannot skip the review ${planner.key} is under`]);
  return out;
}

/**
 * The engines generated task `t` names (its engine, fallbacks, reviewers and every engine a workflow section names)
 * that are not among `allowed`, the engines the run started with; an engine left to the default is said of the task.
 */
function foreignEngines(t: Record<string, unknown>, allowed: ReadonlySet<string>, sections: readonly WorkflowSection[]): TaskProblem[] {
  const out: TaskProblem[] = [];
  const engines: [(string | number)[], unknown][] = [[['engine'], t.engine ?? DEFAULT_ENGINE]];
  if (Array.isArray(t.fallback)) t.fallback.forEach((f, j) => engines.push([['fallback', j], typeof f === 'string' ? f : isObject(f) ? f.engine : undefined]));
  // Its own reviewers, and every engine a workflow section names (its compiled tasks' writers, its readers).
  const refs: EngineRef[] = [
    ...(isObject(t.review) ? [{ kind: 'readers' as const, at: ['review'], entries: t.review.engines, verb: 'review' as const }] : []),
    ...sectionEngines(t, sections),
  ];
  for (const { at, name } of refs.flatMap(namedEngines)) engines.push([at, name]);
  for (const [path, engine] of engines) {
    if (typeof engine !== 'string' || allowed.has(engine)) continue;
    out.push([
      t.engine === undefined && path[0] === 'engine' ? [] : path,
      `engine "${engine}" is not one this run started with (${[...allowed].sort().join(', ')}): generated tasks may use only those`,
    ]);
  }
  return out;
}

/** `file:line:column: severity: message [rule]`, one finding on one line. */
export function formatGeneratedFinding(f: Finding): string {
  const where = f.range ? `${f.file}:${f.range.start.line}:${f.range.start.column}` : f.file;
  return `${where}: ${f.severity}: ${f.message} [${f.rule}]`;
}

function countWorkers(data: unknown[], sections: readonly WorkflowSection[]): number {
  return data.reduce<number>((n, t) => n + (isObject(t) ? compiledCount(t, sections).tasks : 1), 0);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
