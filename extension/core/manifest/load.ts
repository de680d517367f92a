import fs from 'node:fs';
import path from 'node:path';
import { printParseErrorCode, type Node } from 'jsonc-parser';
import type { ErrorObject } from 'ajv';
import { parse as shellParse } from 'shell-quote';
import manifestSchema from '../../../schemas/manifest.schema.json';
import { validateManifest } from '../../../schemas/generated/validateManifest.js';
import { MAX_TIMER_S } from '../fs/timer';
import { parseJsonc } from './json-tree';
import { LineIndex, rangeOfPath, rangeOfPropertyName, formatPath } from './positions';
import { refComponentProblem } from './ref-name';
import { taskGraphProblems } from './rules/task-graph';
import { inputKeysOf, inputsProblems } from './rules/inputs';
import { compileWorkflows, sectionEngines, sectionProblems, type WorkflowSection } from './sections';
import {
  DEFAULT_ENGINE,
  ManifestError,
  type EngineChoice,
  type CritiquePolicy,
  type DistinguishPolicy,
  type GuardSwitches,
  type Manifest,
  type ManifestProblem,
  type ProblemCode,
  type ReviewPolicy,
  type RouteSpec,
  type SuiteSpec,
  type TaskSpec,
  type TreeKind,
} from './types';
import { suiteProblems } from './rules/suite';
import { AUTO_ENGINE, routeProblems, toRouteSpec } from './route-spec';

const DEFAULT_TIMEOUT_S = 900;
const DEFAULT_CHECK_TIMEOUT_S = 300;
/** The suite's time limit when neither the task nor the run gives one, s: a whole test suite runs longer than a check. */
const DEFAULT_SUITE_TIMEOUT_S = 600;
const DEFAULT_MAX_PARALLEL = 4;
const DEFAULT_MAX_ATTEMPTS = 2;
export { DEFAULT_ENGINE } from './types';

/** The manifest schema's validator, compiled at build time (schemas/validators.build.mjs); errors in `.errors`. */
const validateSchema = validateManifest;

const runFields = new Set(Object.keys(manifestSchema.properties));
const taskFields = new Set(Object.keys(manifestSchema.definitions.task.properties));

/** Options of {@link parseManifest}. */
export interface ParseOptions {
  /**
   * Every workflow's section, in the order the loader checks and compiles them (run/workflows/index.ts
   * WORKFLOW_SECTIONS, handed in by the caller: the workflows live above the manifest).
   */
  sections: readonly WorkflowSection[];
  /** Engine names that exist; a task naming another is an error listing these. Unchecked when absent. */
  engines?: ReadonlySet<string>;
  /**
   * Keys of tasks outside this text that its tasks join (a generated file's: the run's compiled keys): a task may come
   * `after` one of them, and taking one as its own key is a duplicate-key error.
   */
  existingKeys?: ReadonlySet<string>;
  /** Only the problems and the tree are wanted (lint): `manifest` stays null, the Manifest is not built. */
  problemsOnly?: boolean;
  /** The config file's `route` block (already checked by config.ts), used by `engine: "auto"` when the manifest has none. */
  route?: Record<string, unknown> | null;
}

/** The outcome of parsing: the manifest when there were no errors (and `problemsOnly` was not asked), and every problem found. */
export interface ParseResult {
  manifest: Manifest | null;
  problems: ManifestProblem[];
  /** The JSONC tree (offsets into the text) when the text had no syntax errors, else null. */
  tree: Node | null;
  /**
   * The text's value when it had no syntax errors (objects without a prototype, as jsonc-parser's getNodeValue makes
   * them: json-tree.ts), else undefined. Read only: `manifest.raw` is part of it.
   */
  value: unknown;
}

/**
 * Parses and validates manifest text (JSONC: comments and trailing commas allowed) against
 * schemas/manifest.schema.json, then checks what a schema cannot: unique task keys, duplicate properties,
 * known engines. Relative `workdir`/`repo` resolve against the manifest's folder. Never throws.
 * @param text the file's contents
 * @param file absolute path used in messages and to resolve relative paths
 */
export function parseManifest(text: string, file: string, options: ParseOptions): ParseResult {
  const index = new LineIndex(text);
  const problems: ManifestProblem[] = [];
  const error = (code: ProblemCode, p: Omit<ManifestProblem, 'file' | 'severity' | 'code'>) => problems.push({ severity: 'error', code, file, ...p });

  const { root, errors: parseErrors, value: raw, repeated } = parseJsonc(text);
  for (const e of parseErrors) {
    error('syntax', {
      range: index.range(e.offset, e.length),
      path: '(syntax)',
      message: `malformed JSON: ${describeParseError(printParseErrorCode(e.error))}`,
    });
  }
  if (parseErrors.length || !root) {
    if (!root && !parseErrors.length) error('syntax', { range: null, path: '(root)', message: 'the file is empty' });
    return { manifest: null, problems, tree: null, value: undefined };
  }
  const c: Checker = { file, root, index, problems, options, error };
  schemaProblems(c, raw, repeated);
  // Checks beyond the schema run even when it failed, so one pass reports every problem; they skip what is malformed.
  const data = (isObject(raw) ? raw : {}) as Record<string, unknown> & { tasks: Record<string, unknown>[] };
  const taskList = Array.isArray(data.tasks) ? data.tasks : [];
  runFieldProblems(c, data);
  runEngineProblems(c, data);
  const seen = new Map<string, number>();
  taskList.forEach((t, i) => {
    if (!isObject(t)) return;
    taskFieldProblems(c, t, i, seen);
    taskEngineProblems(c, data, t, i);
    readerEngineProblems(c, t, i);
    engineArgsProblem(c, t, i);
  });
  crossTaskProblems(c, data, taskList);
  problems.sort((a, b) => (a.range?.offset ?? 0) - (b.range?.offset ?? 0));
  if (options.problemsOnly || problems.some((p) => p.severity === 'error')) return { manifest: null, problems, tree: root, value: raw };

  return { manifest: toManifest(data, file, options.sections, options.route ?? null), problems, tree: root, value: raw };
}

/** Where the checks of one manifest text report: its file (absolute), JSONC tree, line index, problems found so far and parse options. */
interface Checker {
  file: string;
  root: Node;
  index: LineIndex;
  problems: ManifestProblem[];
  options: ParseOptions;
  /** Adds an error of `code` to `problems`. */
  error(code: ProblemCode, p: Omit<ManifestProblem, 'file' | 'severity' | 'code'>): void;
}

/** The text's repeated properties (`repeated`, as parseJsonc found them) and its schema errors (unsafe keys apart), each an error. */
function schemaProblems(c: Checker, raw: unknown, repeated: ReturnType<typeof parseJsonc>['repeated']): void {
  const { root, index, error } = c;
  for (const dup of repeated) {
    error('duplicate-property', {
      range: index.range(dup.node.offset, dup.node.length),
      path: formatPath(dup.path),
      message: `property "${dup.name}" appears more than once; the later one would silently win`,
    });
  }

  if (!validateSchema(raw)) {
    for (const e of simplifyAjvErrors(validateSchema.errors ?? [])) {
      const p = instancePathToJsonPath(e.instancePath);
      const unsafe = isUnsafeKey(e);
      error(unsafe ? 'unsafe-key' : 'schema', {
        range: rangeOfPath(root, p, index),
        path: formatPath(p),
        message: unsafe ? keyMessage(valueAt(raw, p)) : ajvMessage(e, valueAt(raw, p)),
      });
    }
  }
}

/**
 * The run's own fields: `expose` and `sockets` are errors (a repository cannot widen its own sandbox: what every step
 * may reach besides its own dirs is the user's to say), a `hide` entry neither absolute nor under ~/ is an error, and
 * any other field the schema does not name is a warning.
 */
function runFieldProblems(c: Checker, data: Record<string, unknown>): void {
  const { root, index, error } = c;
  for (const key of ['expose', 'sockets']) {
    if (!(key in data)) continue;
    error('schema', {
      range: rangeOfPropertyName(root, [], key, index),
      path: key,
      message: `a manifest cannot ${key === 'expose' ? 'expose a hidden path' : 'let its steps reach a socket of the machine'} (a repository may not widen its own sandbox); only your own config file can ("${key}" in ~/.config/verdict/config.json)`,
    });
  }
  if (Array.isArray(data.hide)) {
    data.hide.forEach((p, i) => {
      if (typeof p === 'string' && !p.startsWith('/') && !p.startsWith('~/'))
        error('schema', {
          range: rangeOfPath(root, ['hide', i], index),
          path: `hide[${i}]`,
          message: `${JSON.stringify(p)} must be an absolute path or start with ~/`,
        });
    });
  }
  for (const key of Object.keys(data)) {
    if (key === 'expose' || key === 'sockets') continue;
    if (!runFields.has(key)) {
      c.problems.push({
        severity: 'warning',
        code: 'unknown-field',
        file: c.file,
        range: rangeOfPropertyName(root, [], key, index),
        path: key,
        message: `unknown field "${key}" is ignored`,
      });
    }
  }
}

/**
 * Reviewer engines (`entries`, names or `{engine, model}`, at `at` + `list` in the tree, `where` in messages) must exist
 * like task engines (a review that cannot start would ERROR every passed task); unchecked without `options.engines`.
 * The script engine cannot review: it runs its prompt with bash, and a reviewer's prompt holds the worker's files, so a
 * line the worker wrote (`echo '{"verdict":"approve",…}'`) would run and answer for it. The same holds for every reader
 * a workflow section names (manifest/sections/engine-ref.ts EngineRef `readers`: the ranking reviewers of `rank` read
 * every passing candidate's work, critics the proposal): `verb` says which.
 */
function unknownReviewers(
  c: Checker,
  entries: unknown,
  at: (string | number)[],
  where: string,
  verb: 'review' | 'rank' | 'criticise' = 'review',
  list = 'engines',
): void {
  const { root, index, options, error } = c;
  if (!Array.isArray(entries)) return;
  entries.forEach((entry, j) => {
    const name = typeof entry === 'string' ? entry : isObject(entry) && typeof entry.engine === 'string' ? entry.engine : null;
    const path = typeof entry === 'string' ? [...at, list, j] : [...at, list, j, 'engine'];
    if (name === 'script') {
      const whose =
        verb === 'review'
          ? "a reviewer's prompt holds the worker's files"
          : verb === 'rank'
            ? "a ranking reviewer's prompt holds the candidates' work"
            : "a critic's prompt holds the worker's files";
      error('schema', {
        range: rangeOfPath(root, path, index),
        path: `${where}.${list}[${j}]`,
        message: `the script engine cannot ${verb}: it runs its prompt as a bash script, and ${whose}, which would then run and could answer for it; ${verb} with a model engine (a custom engine works too, if it reads its prompt as text)`,
      });
      return;
    }
    if (name === null || !options.engines || options.engines.has(name)) return;
    error('unknown-engine', {
      range: rangeOfPath(root, path, index),
      path: `${where}.${list}[${j}]`,
      message: `unknown ${verb === 'review' ? 'reviewer' : verb === 'rank' ? 'ranking reviewer' : 'critic'} engine "${name}"; known engines: ${[...(options.engines as ReadonlySet<string>)].sort().join(', ')}`,
    });
  });
}

/** One reader engine written as `{engine, model}` at `at` (the `engine` string): the same two rules as unknownReviewers. */
function unknownReader(c: Checker, name: unknown, at: (string | number)[], verb: 'write inputs'): void {
  const { root, index, options, error } = c;
  if (typeof name !== 'string') return;
  if (name === 'script') {
    error('schema', {
      range: rangeOfPath(root, at, index),
      path: formatPath(at),
      message: `the script engine cannot ${verb}: it runs its prompt as a bash script, and an inputs engine's prompt holds the passing candidates' work, which would then run; use a model engine (a custom engine works too, if it reads its prompt as text), or make the inputs with a command`,
    });
    return;
  }
  if (!options.engines || options.engines.has(name)) return;
  error('unknown-engine', {
    range: rangeOfPath(root, at, index),
    path: formatPath(at),
    message: `unknown inputs engine "${name}"; known engines: ${[...options.engines].sort().join(', ')}`,
  });
}

/**
 * The engines the run's own fields name: the run's `review` engines (unknownReviewers), each login's engines (a login
 * naming an engine that does not exist limits nothing: a typo would leave the subscription unguarded), the `route`
 * block's problems the schema cannot see, and the run's default `engine`. Unknown engines only with `options.engines`.
 */
function runEngineProblems(c: Checker, data: Record<string, unknown>): void {
  const { root, index, options, error } = c;
  if (isObject(data.review)) unknownReviewers(c, data.review.engines, ['review'], 'review');
  if (isObject(data.logins) && options.engines) {
    for (const [name, login] of Object.entries(data.logins)) {
      if (!isObject(login) || !Array.isArray(login.engines)) continue;
      login.engines.forEach((engine, j) => {
        if (typeof engine !== 'string' || (options.engines as ReadonlySet<string>).has(engine)) return;
        error('unknown-engine', {
          range: rangeOfPath(root, ['logins', name, 'engines', j], index),
          path: `logins.${name}.engines[${j}]`,
          message: `unknown engine "${engine}" in login ${name}; known engines: ${[...(options.engines as ReadonlySet<string>)].sort().join(', ')}`,
        });
      });
    }
  }
  if (data.route !== undefined) {
    // prefer, explore, min_tasks and seed are the schema's (its errors name the range); the rest only these checks see.
    for (const p of routeProblems(data.route, options.engines).filter((x) => !['prefer', 'explore', 'min_tasks', 'seed'].includes(String(x.at[0]))))
      error(p.message.startsWith('unknown engine') ? 'unknown-engine' : 'schema', {
        range: rangeOfPath(root, ['route', ...p.at], index),
        path: formatPath(['route', ...p.at]),
        message: p.message,
      });
  }
  if (typeof data.engine === 'string' && data.engine !== AUTO_ENGINE && options.engines && !options.engines.has(data.engine)) {
    error('unknown-engine', {
      range: rangeOfPath(root, ['engine'], index),
      path: 'engine',
      message: `unknown engine "${data.engine}"; known engines: ${[...options.engines].sort().join(', ')}`,
    });
  }
}

/**
 * Task `i`'s fields: a field the schema does not name is a warning; its key is an error when `options.existingKeys`
 * holds it or an earlier task took it (`seen`: key → index of the first task with it, added to here).
 */
function taskFieldProblems(c: Checker, t: Record<string, unknown>, i: number, seen: Map<string, number>): void {
  const { root, index, options, error } = c;
  for (const key of Object.keys(t)) {
    if (!taskFields.has(key)) {
      c.problems.push({
        severity: 'warning',
        code: 'unknown-field',
        file: c.file,
        range: rangeOfPropertyName(root, ['tasks', i], key, index),
        path: `tasks[${i}].${key}`,
        message: `unknown field "${key}" is ignored`,
      });
    }
  }
  const key = t.key;
  if (typeof key === 'string' && options.existingKeys?.has(key)) {
    error('duplicate-key', {
      range: rangeOfPath(root, ['tasks', i, 'key'], index),
      path: `tasks[${i}].key`,
      message: `the run already has a task "${key}"; keys name directories and branches, so they must be unique`,
    });
  } else if (typeof key === 'string') {
    const first = seen.get(key);
    if (first === undefined) seen.set(key, i);
    else
      error('duplicate-key', {
        range: rangeOfPath(root, ['tasks', i, 'key'], index),
        path: `tasks[${i}].key`,
        message: `duplicate task key "${key}" (first used by tasks[${first}]); keys name directories and branches, so they must be unique`,
      });
  }
}

/**
 * Task `i`'s engine (its own, else the run's, else DEFAULT_ENGINE) and fallbacks: engine "auto" needs a route block
 * (the manifest's or the config's) and takes neither `model` nor `fallback`; any other engine, and each fallback's,
 * must be known (only checked with `options.engines`).
 */
function taskEngineProblems(c: Checker, data: Record<string, unknown>, t: Record<string, unknown>, i: number): void {
  const { root, index, options, error } = c;
  const engine = t.engine ?? data.engine ?? DEFAULT_ENGINE;
  if (engine === AUTO_ENGINE) {
    const at = ['tasks', i, t.engine === undefined ? 'key' : 'engine'];
    if (data.route === undefined && !options.route)
      error('schema', {
        range: rangeOfPath(root, at, index),
        path: `tasks[${i}].engine`,
        message:
          'engine "auto" needs a route block (in the manifest, or the config file\'s "route"): {"from": ["engine:model", …]} names the candidates it picks from',
      });
    if (t.model !== undefined && blankAsNull(t.model) !== null)
      error('schema', {
        range: rangeOfPath(root, ['tasks', i, 'model'], index),
        path: `tasks[${i}].model`,
        message: 'a task with engine "auto" has its model picked by route.from; remove "model" (or name an engine)',
      });
    if (Array.isArray(t.fallback) && t.fallback.length)
      error('schema', {
        range: rangeOfPath(root, ['tasks', i, 'fallback'], index),
        path: `tasks[${i}].fallback`,
        message: 'a task with engine "auto" routes its retries itself (docs/scoreboard.md "Routing"); remove "fallback" (or name an engine)',
      });
  } else if (typeof engine === 'string' && options.engines && !options.engines.has(engine)) {
    error('unknown-engine', {
      range: rangeOfPath(root, ['tasks', i, t.engine === undefined ? 'key' : 'engine'], index),
      path: `tasks[${i}].engine`,
      message: `unknown engine "${engine}"; known engines: ${[...options.engines].sort().join(', ')}`,
    });
  }
  if (Array.isArray(t.fallback) && options.engines) {
    t.fallback.forEach((entry, j) => {
      const name = typeof entry === 'string' ? entry : isObject(entry) && typeof entry.engine === 'string' ? entry.engine : null;
      if (name === null || (options.engines as ReadonlySet<string>).has(name)) return;
      const at = typeof entry === 'string' ? ['tasks', i, 'fallback', j] : ['tasks', i, 'fallback', j, 'engine'];
      error('unknown-engine', {
        range: rangeOfPath(root, at, index),
        path: `tasks[${i}].fallback[${j}]`,
        message: `unknown engine "${name}" in fallback (attempt ${j + 2} would run on it); known engines: ${[...(options.engines as ReadonlySet<string>)].sort().join(', ')}`,
      });
    });
  }
}

/**
 * The other engines task `i` names: its review's (unknownReviewers), and those each workflow section names
 * (ParseOptions.sections: its compiled tasks' writers, which must be known, and its readers, unknownReviewers and
 * unknownReader).
 */
function readerEngineProblems(c: Checker, t: Record<string, unknown>, i: number): void {
  const { root, index, options, error } = c;
  if (isObject(t.review)) unknownReviewers(c, t.review.engines, ['tasks', i, 'review'], `tasks[${i}].review`);
  for (const ref of sectionEngines(t, options.sections)) {
    const at = ['tasks', i, ...ref.at];
    if (ref.kind === 'readers') {
      unknownReviewers(c, ref.entries, at, formatPath(at), ref.verb, ref.list);
      continue;
    }
    if (ref.kind === 'reader') {
      unknownReader(c, ref.name, at, ref.verb);
      continue;
    }
    if (typeof ref.name !== 'string' || !options.engines || options.engines.has(ref.name)) continue;
    error('unknown-engine', {
      range: rangeOfPath(root, at, index),
      path: formatPath(at),
      message: `unknown engine "${ref.name}" (${ref.who} would run on it); known engines: ${[...options.engines].sort().join(', ')}`,
    });
  }
}

/** Task `i`'s `engine_args` given as a string may not hold shell operators, globs or comments (an error). */
function engineArgsProblem(c: Checker, t: Record<string, unknown>, i: number): void {
  const { root, index, error } = c;
  if (typeof t.engine_args === 'string') {
    const parsed = shellParse(t.engine_args);
    if (parsed.some((x) => typeof x !== 'string')) {
      error('engine-args', {
        range: rangeOfPath(root, ['tasks', i, 'engine_args'], index),
        path: `tasks[${i}].engine_args`,
        message: 'engine_args may not contain shell operators, globs or comments; give an array of arguments instead',
      });
    }
  }
}

/** The rules over the task list as a whole: the task graph, inputs, each workflow section's own problems (ParseOptions.sections, under its code), the suites. */
function crossTaskProblems(c: Checker, data: Record<string, unknown>, taskList: Record<string, unknown>[]): void {
  const { root, index, options, error } = c;
  for (const g of taskGraphProblems(taskList, options.existingKeys)) {
    error('task-graph', { range: rangeOfPath(root, g.path, index), path: formatPath(g.path), message: g.message });
  }
  for (const p of inputsProblems(taskList)) {
    error('inputs', { range: rangeOfPath(root, p.path, index), path: formatPath(p.path), message: p.message });
  }
  for (const { code, problem } of sectionProblems(
    taskList,
    { existingKeys: options.existingKeys ?? new Set(), defaultEngine: DEFAULT_ENGINE },
    options.sections,
  )) {
    error(code, { range: rangeOfPath(root, problem.path, index), path: formatPath(problem.path), message: problem.message });
  }
  for (const s of suiteProblems(taskList, data)) {
    error('suite', { range: rangeOfPath(root, s.path, index), path: formatPath(s.path), message: s.message });
  }
}

/**
 * Reads and parses a manifest file.
 * @throws ManifestError listing every error with file:line:column and field path (an unreadable file is one error)
 */
export function loadManifest(file: string, options: ParseOptions): { manifest: Manifest; warnings: ManifestProblem[]; parsed: ParsedText } {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (e) {
    throw new ManifestError([
      { severity: 'error', code: 'unreadable', file: abs, range: null, path: '(file)', message: `cannot read the manifest: ${(e as Error).message}` },
    ]);
  }
  const parsed = parseManifest(text, abs, options);
  const { manifest, problems } = parsed;
  if (!manifest) throw new ManifestError(problems);
  return { manifest, warnings: problems.filter((p) => p.severity === 'warning'), parsed: { ...parsed, text, file: abs } };
}

/** A manifest file's text as one parse left it (loadManifest): what lint reads instead of parsing the file again. */
export interface ParsedText extends ParseResult {
  text: string;
  /** Absolute path of the file. */
  file: string;
}

/** A string field where Ringer reads "" (or blanks) as unset (its Task.from_json strips model and task_type): trimmed, or null. */
function blankAsNull(v: unknown): string | null {
  return typeof v === 'string' && v.trim() ? v.trim() : null;
}

/**
 * A task's `suite` (its own, else the run's) with its time limit (its own `suite_timeout_s`, else the run's, else
 * DEFAULT_SUITE_TIMEOUT_S), or nothing. A council or planner task never gets the run's (its work is a document or a
 * plan); its own is a load error (manifest/rules/suite.ts). The workflow compilers drop it from validators, reviews and chairs.
 */
function suiteOf(t: Record<string, unknown>, data: Record<string, unknown>): { suite?: SuiteSpec } {
  const own = typeof t.suite === 'string' ? t.suite : null;
  const command = own ?? (isObject(t.council) || isObject(t.generate) ? null : typeof data.suite === 'string' ? data.suite : null);
  if (command === null) return {};
  const seconds = (t.suite_timeout_s as number | undefined) ?? (data.suite_timeout_s as number | undefined) ?? DEFAULT_SUITE_TIMEOUT_S;
  return { suite: { command, timeoutMs: Math.round(seconds * 1000) } };
}

/**
 * One task of a checked manifest as its TaskSpec, before the workflows are compiled: the task's fields over the
 * manifest's defaults (`data`), times in ms, engine "auto" resolved to the route's first candidate (`route`: the
 * manifest's, else the config's, else null, when "auto" is not resolved).
 */
function toTaskSpec(t: Record<string, unknown>, data: Record<string, unknown>, route: RouteSpec | null): TaskSpec {
  const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  const auto = (str(t.engine) ?? str(data.engine)) === AUTO_ENGINE && route !== null;
  return {
    key: t.key as string,
    spec: t.spec as string,
    // A planner without a check of its own: its file must at least be there (the generate step then judges its content).
    check: (t.check as string | undefined) ?? plannerCheck((t.generate as { file: string }).file),
    expectFiles: withPlannerFile((t.expect_files as string[] | undefined) ?? [], t.generate),
    // engine "auto": the first candidate until an attempt is routed (run/route-choice.ts).
    engine: auto ? (route as RouteSpec).from[0]!.engine : (str(t.engine) ?? str(data.engine) ?? DEFAULT_ENGINE),
    model: auto ? (route as RouteSpec).from[0]!.model : blankAsNull(t.model),
    ...(auto ? { route: route as RouteSpec } : {}),
    taskType: blankAsNull(t.task_type),
    timeoutMs: Math.round(((t.timeout_s as number | undefined) ?? DEFAULT_TIMEOUT_S) * 1000),
    checkTimeoutMs: Math.round(((t.check_timeout_s as number | undefined) ?? DEFAULT_CHECK_TIMEOUT_S) * 1000),
    watchdogMs: typeof t.watchdog_s === 'number' ? Math.round(t.watchdog_s * 1000) : null,
    ...suiteOf(t, data),
    ...optionalNumber('memoryMb', t.memory_mb ?? data.memory_mb),
    ...optionalNumber('logMaxMb', t.log_max_mb ?? data.log_max_mb),
    engineArgs: typeof t.engine_args === 'string' ? (shellParse(t.engine_args) as string[]) : ((t.engine_args as string[] | undefined) ?? []),
    verified: str(t.verified),
    fullAccess: t.full_access === true,
    network: t.network === 'host' ? 'host' : t.network !== false,
    protect: (t.protect as string[] | undefined) ?? (data.protect as string[] | undefined) ?? null,
    maxAttempts: (t.max_attempts as number | undefined) ?? DEFAULT_MAX_ATTEMPTS,
    ...(t.on_quota === 'wait' ? { onQuota: 'wait' as const } : {}),
    ...(typeof t.budget_usd === 'number' ? { budgetUsd: t.budget_usd } : {}),
    ...(typeof t.max_attempt_usd === 'number' ? { maxAttemptUsd: t.max_attempt_usd } : {}),
    ...(typeof t.budget_tokens === 'number' ? { budgetTokens: t.budget_tokens } : {}),
    ...(typeof t.max_attempt_tokens === 'number' ? { maxAttemptTokens: t.max_attempt_tokens } : {}),
    fallback: ((t.fallback as unknown[] | undefined) ?? []).map((f): EngineChoice =>
      typeof f === 'string' ? { engine: f, model: null } : { engine: (f as { engine: string }).engine, model: str((f as { model?: unknown }).model) },
    ),
    after: (t.after as string[] | undefined) ?? [],
    review: t.review === false ? null : reviewPolicy(isObject(t.review) ? t.review : data.review),
    guard: guardSwitches(data.guard, t.guard),
    allowDeps: allowDeps(t.allow_deps ?? data.allow_deps),
    allowPaths: (t.allow_paths as string[] | undefined) ?? (data.allow_paths as string[] | undefined) ?? null,
    sparse: (t.sparse as string[] | undefined) ?? (data.sparse as string[] | undefined) ?? null,
    ...(isObject(t.generate) ? { generate: { file: t.generate.file as string, maxTasks: t.generate.max_tasks as number } } : {}),
    ...inputsOf(t.inputs),
    ...(isObject(t.rank) && Array.isArray(t.rank.engines) ? { rank: { rubric: t.rank.rubric as string, engines: engineChoices(t.rank.engines) } } : {}),
    ...(typeof t.stop_after === 'number' ? { stopAfter: t.stop_after } : {}),
    ...(isObject(t.distinguish) ? { distinguish: distinguishPolicy(t.distinguish) } : {}),
    ...(isObject(t.critique) ? { critique: critiquePolicy(t.critique) } : {}),
  };
}

/** The Manifest of a checked manifest `data` read from `file`: its tasks as TaskSpecs, workflows compiled, paths resolved. */
function toManifest(
  data: Record<string, unknown> & { tasks: Record<string, unknown>[] },
  file: string,
  sections: readonly WorkflowSection[],
  configRoute: Record<string, unknown> | null = null,
): Manifest {
  const dir = path.dirname(file);
  const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  const route = isObject(data.route) ? toRouteSpec(data.route, 'manifest') : configRoute ? toRouteSpec(configRoute, 'config') : null;
  const tasks = data.tasks.map((t) => toTaskSpec(t, data, route));
  const compiled = compileWorkflows(tasks, data.tasks, { worktrees: data.worktrees === true }, sections);
  return {
    file,
    runName: str(data.run_name) ?? path.basename(file).replace(/\.(swarm\.)?jsonc?$/, ''),
    workdir: path.resolve(dir, str(data.workdir) ?? '.verdict-work'),
    maxParallel: (data.max_parallel as number | undefined) ?? DEFAULT_MAX_PARALLEL,
    worktrees: data.worktrees === true,
    tree: (data.tree as TreeKind | undefined) ?? 'worktree',
    repo: path.resolve(dir, str(data.repo) ?? '.'),
    baseRef: str(data.base_ref) ?? 'HEAD',
    budgetUsd: (data.budget_usd as number | undefined) ?? null,
    budgetTokens: (data.budget_tokens as number | undefined) ?? null,
    ...(isObject(data.logins)
      ? {
          logins: Object.fromEntries(
            Object.entries(data.logins)
              .filter(([, l]) => isObject(l))
              .map(([name, l]) => [name, loginOf(l as { engines: string[]; max_parallel: number; billing?: 'subscription' | 'metered' })]),
          ),
        }
      : {}),
    setup: str(data.setup),
    include: (data.include as string[] | undefined) ?? [],
    pool: str(data.pool),
    remote: str(data.remote)?.startsWith('.') ? path.resolve(dir, str(data.remote) as string) : str(data.remote),
    hide: (data.hide as string[] | undefined) ?? [],
    tasks: compiled,
    raw: data,
    taskKeys: compiled.map((t) => t.key),
  };
}

/** `{[name]: value}` when `value` is a number, else nothing (an absent optional field). Pure. */
function optionalNumber<K extends string>(name: K, value: unknown): { [k in K]?: number } {
  return typeof value === 'number' ? ({ [name]: value } as { [k in K]?: number }) : {};
}

/** A schema-valid `review` object as a ReviewPolicy (`require` defaults to all); null when there is none. */
/** `inputs` as written → TaskSpec.inputs (each key a source named after itself, or anonymous); {} when absent. */
function inputsOf(v: unknown): Pick<TaskSpec, 'inputs'> {
  const parsed = inputKeysOf(v);
  return parsed ? { inputs: { from: parsed.keys.map((key) => ({ key })), anonymous: parsed.anonymous } } : {};
}

function reviewPolicy(v: unknown): ReviewPolicy | null {
  if (!isObject(v) || !Array.isArray(v.engines)) return null;
  return {
    engines: engineChoices(v.engines),
    require: v.require === 'majority' || v.require === 'any' ? v.require : 'all',
  };
}

/** Schema-valid reviewer entries (an engine name, or `{engine, model}`) as EngineChoices. */
function engineChoices(entries: unknown[]): EngineChoice[] {
  return entries.map((f): EngineChoice =>
    typeof f === 'string'
      ? { engine: f, model: null }
      : { engine: (f as { engine: string }).engine, model: typeof (f as { model?: unknown }).model === 'string' ? (f as { model: string }).model : null },
  );
}

/** A schema-valid `critique` object as a CritiquePolicy (`rounds` defaults to 2, no time limit). */
function critiquePolicy(v: Record<string, unknown>): CritiquePolicy {
  return {
    critics: engineChoices(v.critics as unknown[]),
    rounds: typeof v.rounds === 'number' ? v.rounds : 2,
    timeLimitMs: typeof v.time_limit_s === 'number' ? Math.round(v.time_limit_s * 1000) : null,
  };
}

/** The `guard` switches: all on, then the run's value, then the task's (`false` turns all off; an object, the ones it names). */
function guardSwitches(run: unknown, task: unknown): GuardSwitches {
  const out: GuardSwitches = { secrets: true, stubs: true, deps: true, paths: true };
  for (const v of [run, task]) {
    if (typeof v === 'boolean') for (const k of Object.keys(out) as (keyof GuardSwitches)[]) out[k] = v;
    else if (isObject(v)) for (const k of Object.keys(out) as (keyof GuardSwitches)[]) if (typeof v[k] === 'boolean') out[k] = v[k] as boolean;
  }
  return out;
}

/** `allow_deps`: true allows any; a list, those; absent or false, none. */
function allowDeps(v: unknown): true | string[] {
  if (v === true) return true;
  return Array.isArray(v) ? (v as string[]) : [];
}

/** The check of a planner that has none: its tasks file exists and is not empty (bash, the path single-quoted). */
function plannerCheck(file: string): string {
  const quoted = `'${file.replace(/'/g, `'\\''`)}'`;
  return `test -s ${quoted} || { echo ${quoted}" is missing or empty: the planner must write its tasks there"; exit 1; }`;
}

/** A planner's expect_files with its tasks file added (a real, non-empty file, not a symlink: run/check.ts). */
function withPlannerFile(expect: string[], generate: unknown): string[] {
  const file = isObject(generate) && typeof generate.file === 'string' ? generate.file : null;
  return file && !expect.includes(file) ? [...expect, file] : expect;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function instancePathToJsonPath(instancePath: string): (string | number)[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** Drops the noise ajv adds for oneOf/not branches when a clearer error on the same value exists. */
function simplifyAjvErrors(errors: ErrorObject[]): ErrorObject[] {
  const out: ErrorObject[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'oneOf' || e.keyword === 'if') continue;
    const id = `${e.instancePath}|${ajvMessage(e)}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(e);
  }
  return out;
}

/**
 * Why a task key the schema refused is refused: the characters allowed, or else the git-check-ref-format(1) rule it
 * breaks (the key is the last component of the branch `verdict/<run_id>/<key>`), with a key that would do.
 */
function keyMessage(key: unknown): string {
  const generic =
    'a task key becomes a directory and a branch name: use only letters, digits, ".", "_" and "-", do not start with a dot, and never use ".." (no "/" or "\\")';
  if (typeof key !== 'string' || !/^[A-Za-z0-9._-]+$/.test(key)) return generic;
  const reason = refComponentProblem(key);
  if (!reason) return generic;
  let better = key;
  while (/(\.lock|\.)$/.test(better)) better = better.replace(/(\.lock|\.)$/, '');
  better = better.replace(/\.{2,}/g, '.').replace(/^\.+/, '');
  const instead = better && !refComponentProblem(better) ? ` (e.g. "${better}")` : '';
  return `task key "${key}" cannot be part of a git branch name: ${reason}, which git-check-ref-format(1) forbids in every component, and the key becomes the branch verdict/<run_id>/${key}. Rename it${instead}.`;
}

/** The value at a JSON path of parsed data, or undefined. */
function valueAt(data: unknown, jsonPath: (string | number)[]): unknown {
  let at = data;
  for (const seg of jsonPath) at = typeof at === 'object' && at !== null ? (at as Record<string | number, unknown>)[seg] : undefined;
  return at;
}

/** A task key that fails the key's pattern (letters, digits, `.`, `_`, `-`; no leading dot; never `..`; not ending with `.` or `.lock`). */
function isUnsafeKey(e: ErrorObject): boolean {
  return /^\/tasks\/\d+\/key$/.test(e.instancePath) && (e.keyword === 'pattern' || e.keyword === 'not');
}

/** Ajv's range keywords: the value is out of the field's range (schemas/manifest.schema.json gives every number one). */
const RANGE_KEYWORDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

/**
 * The message of one schema error; `value` is the value at the error's path (quoted in range errors). A time limit
 * past {@link MAX_TIMER_S} also says why that is the limit.
 */
function ajvMessage(e: ErrorObject, value?: unknown): string {
  const field = e.instancePath.split('/').pop();
  if (e.keyword === 'required') return `missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
  if (field === 'key' && (e.keyword === 'pattern' || e.keyword === 'not')) return 'the task key is refused';
  if (e.keyword === 'type') return `must be ${(e.params as { type: string }).type}`;
  if (RANGE_KEYWORDS.has(e.keyword)) {
    const { comparison, limit } = e.params as { comparison: string; limit: number };
    const timer =
      e.keyword === 'maximum' && limit === MAX_TIMER_S
        ? ` (seconds: Node's timers hold at most 2^31−1 ms, about 24.8 days, and a longer limit would fire at once)`
        : '';
    return `must be ${comparison} ${limit}, got ${JSON.stringify(value)}${timer}`;
  }
  return e.message ?? `fails ${e.keyword}`;
}

function describeParseError(code: string): string {
  const words: Record<string, string> = {
    InvalidSymbol: 'unexpected character',
    InvalidNumberFormat: 'invalid number',
    PropertyNameExpected: 'a property name (in double quotes) was expected',
    ValueExpected: 'a value was expected',
    ColonExpected: 'a colon was expected',
    CommaExpected: 'a comma was expected',
    CloseBraceExpected: 'a closing } was expected',
    CloseBracketExpected: 'a closing ] was expected',
    EndOfFileExpected: 'the end of the file was expected',
    UnexpectedEndOfComment: 'a comment is not closed',
    UnexpectedEndOfString: 'a string is not closed',
    UnexpectedEndOfNumber: 'a number is not complete',
    InvalidUnicode: 'invalid unicode escape',
    InvalidEscapeCharacter: 'invalid escape character',
    InvalidCharacter: 'invalid character',
  };
  return words[code] ?? code;
}

/** A validated `logins` entry as the run reads it (`billing` only when given). */
function loginOf(l: { engines: string[]; max_parallel: number; billing?: 'subscription' | 'metered' }): {
  engines: string[];
  maxParallel: number;
  billing?: 'subscription' | 'metered';
} {
  return { engines: l.engines, maxParallel: l.max_parallel, ...(l.billing ? { billing: l.billing } : {}) };
}

/**
 * `distinguish` as the schema let it through (inputs and probe given), its defaults filled in: 20 inputs, 30 s; an
 * inputs engine as an EngineChoice (model null: the engine's default).
 */
function distinguishPolicy(d: Record<string, unknown>): DistinguishPolicy {
  return {
    inputs: isObject(d.inputs) ? (engineChoices([d.inputs])[0] as EngineChoice) : (d.inputs as string),
    probe: d.probe as string,
    maxInputs: (d.max_inputs as number | undefined) ?? 20,
    timeoutMs: Math.round(((d.timeout_s as number | undefined) ?? 30) * 1000),
  };
}
