import fs from 'node:fs';
import path from 'node:path';
import type { EngineSpec } from '../../../engines/types';
import { findBinary } from '../../../engines';
import { inspectRepo, type RepoInfo } from '../git/worktree';
import { repoWorktreeConfigProblems } from '../git/worktree-config';
import type { Manifest, TaskSpec } from '../manifest/types';
import { probeNetstack, probeSandbox, type SandboxMode } from '../process/sandbox';
import { decideContainment, tasksNeedingNetstack, type RunContainment } from './containment';
import { fullAccessProblems } from './full-access';
import { treeProblems } from './trees';

/** Thrown when a run cannot start; `problems` has one line per problem. Nothing was created on disk. */
export class PreflightError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'PreflightError';
  }
}

/** What preflight found that the run needs. */
export interface Preflight {
  /** Worktree mode: the repository; null in plain mode. */
  repo: RepoInfo | null;
  /** Engine name → absolute path of its binary. */
  binaries: Map<string, string>;
  /** The run's containment (bubblewrap, or none when the user turned it off). */
  containment: RunContainment;
}

/** An engine a workflow's reader runs on (run/workflows/workflow.ts readerEngines): its name, and whether it runs here on a pool run. */
export interface ReaderEngine {
  engine: string;
  here: boolean;
}

/**
 * The engines the workflows' readers of a task run on (critics, ranking reviewers, an inputs engine): the workflow
 * table's (run/workflows/index.ts workflowReaderEngines), handed in by the caller (the table reaches the live run).
 */
export type ReaderEngines = (spec: TaskSpec) => readonly ReaderEngine[];

/** What the user allows, from flags, config and settings (see RunOptions). */
export interface RunPolicy {
  sandbox: SandboxMode;
  allowFullAccess: boolean;
  /** Where `allow_full_access` would be set: the config file read, or the default path; named in the refusal. */
  configSource: string;
  /** The attempts run on other machines (a pool run): engines must be known, but need not be installed here. */
  enginesElsewhere?: boolean;
}

/**
 * Everything that can be known wrong before any task starts: unknown engines, missing engine binaries (naming the
 * binary and how to install it), worktree mode outside a git repository or with a base_ref that names no commit,
 * include files that do not exist, a plain-mode workdir or a VERDICT_HOME (`home`) that cannot be written, no
 * sandbox where `policy` wants one, a task with full_access that `policy` does not allow. The engines a task runs on
 * are its own, its fallback and routing engines, its reviewers, and its workflows' readers (`readers`). Creates nothing.
 * @throws PreflightError listing every problem found
 */
export async function preflight(
  manifest: Manifest,
  engines: ReadonlyMap<string, EngineSpec>,
  env: NodeJS.ProcessEnv,
  home: string | undefined,
  policy: RunPolicy,
  readers: ReaderEngines,
): Promise<Preflight> {
  const problems: string[] = [];
  const decided = decideContainment(policy.sandbox, await probeSandbox(env), await probeNetstack(env), tasksNeedingNetstack(manifest.tasks));
  const containment: RunContainment | null = typeof decided === 'string' ? null : decided;
  if (typeof decided === 'string') problems.push(decided);
  problems.push(...fullAccessProblems(manifest, policy.allowFullAccess, policy.configSource));
  if (home) {
    const problem = writableFolderProblem('VERDICT_HOME', home);
    if (problem) problems.push(problem);
  }
  const { named, here } = enginesNamed(manifest, readers);
  const binaries = new Map<string, string>();
  for (const name of named) {
    const engine = engines.get(name);
    if (!engine) {
      problems.push(`unknown engine "${name}"; known engines: ${[...engines.keys()].sort().join(', ')}`);
      continue;
    }
    if (policy.enginesElsewhere && !here.has(name)) continue;
    const found = findBinary(engine.binary, env.PATH ?? '');
    if (found) binaries.set(name, found);
    else
      problems.push(
        `engine "${name}" needs the \`${engine.binary}\` command, which is not on PATH${policy.enginesElsewhere ? ' (ranking reviewers, inputs engines and critics run on this machine, even on a pool run)' : ''}. Install it: ${engine.install}`,
      );
  }
  let repo: RepoInfo | null = null;
  if (manifest.worktrees) {
    try {
      repo = await inspectRepo(manifest.repo, manifest.baseRef);
      problems.push(...(await repoWorktreeConfigProblems(repo.root)));
      for (const rel of manifest.include) {
        if (path.isAbsolute(rel) || path.normalize(rel).split(path.sep).includes('..'))
          problems.push(`include: ${rel} must be a path inside the repository (no absolute path, no ..)`);
        else if (!fs.existsSync(path.join(repo.root, rel))) problems.push(`include: ${rel} does not exist in ${repo.root}`);
      }
    } catch (e) {
      problems.push((e as Error).message);
    }
    problems.push(...(await treeProblems(manifest)));
  } else {
    if ((manifest.tree ?? 'worktree') !== 'worktree') problems.push(...(await treeProblems(manifest)));
    const problem = writableFolderProblem('workdir', manifest.workdir);
    if (problem) problems.push(problem);
    // Task dirs inside VERDICT_HOME would move the records aside (a key named "runs").
    if (home && isWithin(path.resolve(manifest.workdir), path.resolve(home)))
      problems.push(`workdir ${manifest.workdir} is inside VERDICT_HOME (${home}), where the run records live; choose a workdir outside it`);
  }
  if (problems.length || !containment) throw new PreflightError(problems);
  return { repo, binaries, containment };
}

/**
 * Every engine a task of `manifest` may run on (`named`): its own, each of its fallback engines (a retry must not fail
 * for a missing binary), its routing candidates, its reviewers, and its workflows' readers (critics, ranking reviewers,
 * an inputs engine: `readers`); `here`: those that run on this machine even on a pool run.
 */
function enginesNamed(manifest: Manifest, readers: ReaderEngines): { named: Set<string>; here: Set<string> } {
  const named = new Set<string>();
  const here = new Set<string>();
  for (const t of manifest.tasks) {
    for (const name of [
      t.engine,
      ...t.fallback.map((f) => f.engine),
      ...(t.route?.from ?? []).map((c) => c.engine),
      ...(t.review?.engines ?? []).map((r) => r.engine),
    ])
      named.add(name);
    for (const reader of readers(t)) {
      named.add(reader.engine);
      if (reader.here) here.add(reader.engine);
    }
  }
  return { named, here };
}

/** The defaults: sandboxed, no full access. */
export const DEFAULT_POLICY: RunPolicy = { sandbox: 'auto', allowFullAccess: false, configSource: 'your Verdict config file (~/.config/verdict/config.json)' };

/** Why `dir` (called `label` in the message) cannot be created or written, or null when it can. Creates nothing. */
function writableFolderProblem(label: string, dir: string): string | null {
  let existing = dir;
  while (!fs.existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  try {
    if (!fs.statSync(existing).isDirectory()) return `${label} ${dir} cannot be created: ${existing} is a file`;
    fs.accessSync(existing, fs.constants.W_OK);
    return null;
  } catch (e) {
    return `${label} ${dir} cannot be written: ${(e as Error).message}`;
  }
}

/** `p` is `dir` or inside it. */
function isWithin(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir + path.sep);
}
