/**
 * What every lint rule reads: the parsed JSONC tree of one manifest, with the run settings and tasks picked out
 * (wrongly typed values left out, so a rule never trips over a half-typed manifest), and the context the lint
 * runs in. Pure: no file system, no processes.
 */
import path from 'node:path';
import { findNodeAtLocation, type JSONPath, type Node } from 'jsonc-parser';
import type { EngineSpec } from '../../../../engines/types';
import type { LineIndex, SourceRange } from '../positions';
import type { Finding } from '../findings';
import type { EngineRef } from '../sections/engine-ref';
import { DEFAULT_ENGINE } from '../types';
import { JsonString } from './json-string';
import { parseShell, type ShellList } from './shell';

/** What the linter needs to know beyond the manifest text. */
export interface LintContext {
  /** The engines a run can use by name (built-ins plus configured custom ones, see engines/index.ts). */
  engines: ReadonlyMap<string, EngineSpec>;
  /** The user's `allow_full_access` config / `verdict.allowFullAccess` setting; absent means not allowed. */
  allowFullAccess?: boolean;
  /**
   * False skips the part of deliverable-lost that asks git whether expected files are ignored (no process is
   * spawned); absent means true.
   */
  useGit?: boolean;
  /**
   * The PATH engine binaries are looked for on (PATH syntax); absent skips engine-not-installed. `verdict lint`,
   * `verdict doctor MANIFEST` and the editor pass their own PATH; the start gate does not (the preflight refuses a
   * missing binary itself).
   */
  pathEnv?: string;
  /**
   * Whether the eval log holds a judged task of `model` on `taskType` (the scoreboard's rows); absent skips the route
   * rule's "auto will explore" finding. `verdict lint` passes it; the editor and the start gate do not.
   */
  routeEvidence?: (model: string, taskType: string | null) => boolean;
  /**
   * The manifest's forecast held against a budget_usd (micro-USD) of the run (`taskKey` null) or of a task: why that
   * budget is below what the forecast expects the run or task to cost (naming both figures), or null
   * (core/scoreboard/plan.ts budgetCheck). Absent skips the budget-forecast rule: `verdict lint`, `verdict run` (with a
   * budget_usd) and the MCP lint tool pass it; the editor does not.
   */
  budgetForecast?: (budgetMicroUsd: number, taskKey: string | null) => string | null;
  /**
   * Every engine the workflows' sections name in one task as written (manifest/sections/index.ts sectionEngines over
   * LintOptions.sections), in section order: lint (manifest/lint.ts lintParsed) sets it for its rules.
   */
  sectionEngines: (task: Record<string, unknown>) => EngineRef[];
}

/** One task as the rules see it; every field is null when absent or of the wrong type. */
export interface LintTask {
  /** Position in `tasks`. */
  index: number;
  /** The task object node. */
  node: Node;
  key: string | null;
  /** `engine`, or the default engine when absent. */
  engine: string;
  spec: JsonString | null;
  check: JsonString | null;
  /**
   * The check read as bash (rules/shell.ts), parsed once for every rule and shared by every task of the document with
   * the same check text (offsets index into the check, so they hold for each); rules only read it.
   */
  checkScript: ShellList[] | null;
  model: JsonString | null;
  /** Each string entry of expect_files, in order; null when the field is absent or not an array. */
  expectFiles: JsonString[] | null;
  /** engine_args as argv elements (a string is split on blanks; quoting does not matter to the rules). */
  engineArgs: string[];
  /** The raw task object (parsed JSONC). */
  raw: Record<string, unknown>;
}

/** A parsed manifest as the rules see it. */
export interface LintDocument {
  text: string;
  /** Absolute path of the manifest. */
  file: string;
  index: LineIndex;
  root: Node;
  /** The raw run-level object (parsed JSONC); empty when the root is not an object. */
  raw: Record<string, unknown>;
  worktrees: boolean;
  /** Plain mode task root, absolute (default `.verdict-work` beside the manifest, as in load.ts). */
  workdir: string;
  /** Worktree mode repository, absolute (default: the manifest's folder). */
  repo: string;
  tasks: LintTask[];
}

/** A finding before the linter adds the file. */
export type RuleFinding = Omit<Finding, 'file'>;

/** A lint rule: reads the document, returns its findings in any order. */
export type Rule = (doc: LintDocument, ctx: LintContext) => RuleFinding[] | Promise<RuleFinding[]>;

/**
 * Builds the rules' view of a manifest from its parsed tree and value.
 * @param value the text's value as parseManifest returns it (json-tree.ts: objects without a prototype); read only
 */
export function lintDocument(text: string, file: string, root: Node, index: LineIndex, value: unknown): LintDocument {
  const raw = root.type === 'object' ? (value as Record<string, unknown>) : {};
  const dir = path.dirname(file);
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  const tasksNode = findNodeAtLocation(root, ['tasks']);
  const tasksRaw = Array.isArray(raw.tasks) ? (raw.tasks as unknown[]) : [];
  const tasks: LintTask[] = [];
  // 1,000 tasks usually share a few checks: each distinct text is read once.
  const scripts = new Map<string, ShellList[]>();
  const scriptOf = (check: string): ShellList[] => {
    let lists = scripts.get(check);
    if (!lists) scripts.set(check, (lists = parseShell(check)));
    return lists;
  };
  if (tasksNode?.type === 'array') {
    (tasksNode.children ?? []).forEach((node, i) => {
      if (node.type !== 'object') return;
      const taskRaw = tasksRaw[i] as Record<string, unknown>;
      const string = (field: string) => {
        const n = findNodeAtLocation(node, [field]);
        return n?.type === 'string' ? new JsonString(n, text, index) : null;
      };
      const filesNode = findNodeAtLocation(node, ['expect_files']);
      const check = string('check');
      const args = taskRaw.engine_args;
      tasks.push({
        index: i,
        node,
        key: str(taskRaw.key),
        engine: str(taskRaw.engine) ?? str(raw.engine) ?? DEFAULT_ENGINE,
        spec: string('spec'),
        check,
        checkScript: check ? scriptOf(check.value) : null,
        model: string('model'),
        expectFiles:
          filesNode?.type === 'array' ? (filesNode.children ?? []).filter((c) => c.type === 'string').map((c) => new JsonString(c, text, index)) : null,
        engineArgs: Array.isArray(args)
          ? args.filter((a): a is string => typeof a === 'string')
          : typeof args === 'string'
            ? args.split(/\s+/).filter(Boolean)
            : [],
        raw: taskRaw,
      });
    });
  }
  return {
    text,
    file,
    index,
    root,
    raw,
    worktrees: raw.worktrees === true,
    workdir: path.resolve(dir, str(raw.workdir) ?? '.verdict-work'),
    repo: path.resolve(dir, str(raw.repo) ?? '.'),
    tasks,
  };
}

/** The range of the value at `path` under `node`, or null when absent. */
export function rangeAt(doc: LintDocument, node: Node, jsonPath: JSONPath): SourceRange | null {
  const found = findNodeAtLocation(node, jsonPath);
  return found ? doc.index.range(found.offset, found.length) : null;
}

/** The harness of the task's engine (`codex-cli`, `script`, ...), or null when the engine is unknown. */
export function harnessOf(task: LintTask, ctx: LintContext): string | null {
  return ctx.engines.get(task.engine)?.harness ?? null;
}

/** Where to point at a task as a whole (a missing field): its key's value, else the task object. */
export function taskAnchor(doc: LintDocument, task: LintTask): SourceRange {
  return rangeAt(doc, task.node, ['key']) ?? doc.index.range(task.node.offset, task.node.length);
}
