import fs from 'node:fs';
import path from 'node:path';
import { findNodeAtLocation, findNodeAtOffset, getNodePath, parseTree, type Node } from 'jsonc-parser';
import { runDir } from '../config/home';
import type { RunState } from '../live/state';
import type { Finding } from '../manifest/findings';
import { lintManifestText, lintParsed, type LintOptions } from '../manifest/lint';
import { parseManifest } from '../manifest/load';
import type { WorkflowSection } from '../manifest/sections';
import { LineIndex, type SourceRange } from '../manifest/positions';
import { formatProblem, type Manifest, type ManifestProblem } from '../manifest/types';

/** `<home>/runs/<runId>/manifest.json`: the manifest exactly as the run loaded it, `{ source, manifest }`. */
export function frozenManifestPath(home: string, runId: string): string {
  return path.join(runDir(home, runId), 'manifest.json');
}

/** Freezes the manifest a run starts with, so rerun, resume and merge work however the file changes later. */
export function writeFrozenManifest(home: string, runId: string, manifest: Manifest): void {
  // engine "auto" routed by the config's route block: frozen into the manifest, so a resume routes as this run did
  // whatever the config says by then.
  const own = manifest.raw as Record<string, unknown>;
  const fromConfig = own.route === undefined ? manifest.tasks.find((t) => t.route?.source === 'config')?.route : undefined;
  const raw = fromConfig
    ? {
        ...own,
        route: {
          from: fromConfig.from.map((c) => c.id),
          prefer: fromConfig.prefer,
          explore: fromConfig.explore,
          min_tasks: fromConfig.minTasks,
          ...(fromConfig.seed !== null ? { seed: fromConfig.seed } : {}),
        },
      }
    : manifest.raw;
  fs.writeFileSync(frozenManifestPath(home, runId), JSON.stringify({ source: manifest.file, manifest: raw }, null, 2));
}

/**
 * Loads a run's frozen manifest as a Manifest, relative paths resolved against the original manifest's folder, its
 * workflows compiled by `sections` (run/workflows/index.ts WORKFLOW_SECTIONS, handed in: the table reaches this file).
 * @throws Error naming the frozen file when it cannot be read or no longer loads (e.g. an engine since removed)
 */
export function loadFrozenManifest(home: string, state: RunState, sections: readonly WorkflowSection[], engines?: ReadonlySet<string>): Manifest {
  const file = frozenManifestPath(home, state.runId);
  let frozen: { manifest?: unknown };
  try {
    frozen = JSON.parse(fs.readFileSync(file, 'utf8')) as { manifest?: unknown };
  } catch (e) {
    throw new Error(`cannot read the frozen manifest ${file}: ${(e as Error).message}`);
  }
  const { manifest, problems } = parseManifest(JSON.stringify(frozen.manifest ?? null), state.manifestFile, { sections, engines });
  if (!manifest) throw noLongerLoads(file, problems);
  return manifest;
}

/** The error of a frozen manifest `file` that no longer loads, naming its errors (`problems`, of its compact text). */
function noLongerLoads(file: string, problems: readonly ManifestProblem[]): Error {
  return new Error(
    `the frozen manifest ${file} no longer loads: ${problems
      .filter((p) => p.severity === 'error')
      .map(formatProblem)
      .join('; ')}`,
  );
}

/**
 * A run's frozen manifest loaded (as loadFrozenManifest, with the engines `ctx` names) and linted (as
 * lintFrozenManifest) from one parse of it, which lint is handed (manifest/lint.ts lintParsed): what `verdict resume`
 * and `verdict rerun` of a run that ended do before they go on.
 * @throws Error as loadFrozenManifest: the frozen file cannot be read or no longer loads (its message is the same)
 */
export async function loadAndLintFrozenManifest(home: string, state: RunState, ctx: LintOptions): Promise<{ manifest: Manifest; findings: Finding[] }> {
  const file = frozenManifestPath(home, state.runId);
  const read = readFrozen(file);
  if ('error' in read) throw new Error(`cannot read the frozen manifest ${file}: ${read.error}`);
  const { text, frozen } = read;
  const linted = JSON.stringify(frozen.manifest ?? null, null, 2);
  const options = { sections: ctx.sections, engines: new Set(ctx.engines.keys()), existingKeys: ctx.existingKeys, route: ctx.route ?? null };
  const parsed = parseManifest(linted, state.manifestFile, options);
  if (!parsed.manifest) {
    // Said with the positions of the compact text, as loadFrozenManifest says it (only on this path is it parsed again).
    throw noLongerLoads(file, parseManifest(JSON.stringify(frozen.manifest ?? null), state.manifestFile, options).problems);
  }
  const findings = await lintParsed({ ...parsed, text: linted, file: state.manifestFile }, ctx);
  return { manifest: parsed.manifest, findings: inFrozenFile(findings, linted, text, file) };
}

/** How to go on from lint errors in a run's frozen manifest (startGateLines' `fix`): no edit of the manifest file changes it. */
export const FROZEN_MANIFEST_FIX = 'a run keeps the manifest it started with: fix the manifest file and start a new run';

/**
 * Lints a run's frozen manifest, what `verdict resume` and `verdict rerun` of a run that ended would run (the manifest
 * file may have changed since): the text is the frozen `manifest` as JSON, linted as its original file (relative
 * `repo`/`workdir` resolve against that file's folder, as when the run started); each finding then names the frozen
 * file, `<home>/runs/<run_id>/manifest.json`, at the line and column of the same value there. Feed the result to
 * manifest/lint.ts startGate, as a start does with the manifest file's findings.
 * @returns the findings; a frozen file that cannot be read or parsed is one `invalid-manifest` error (no range)
 */
export async function lintFrozenManifest(home: string, state: RunState, ctx: LintOptions): Promise<Finding[]> {
  const file = frozenManifestPath(home, state.runId);
  const read = readFrozen(file);
  if ('error' in read)
    return [{ rule: 'invalid-manifest', severity: 'error', message: `cannot read the frozen manifest: ${read.error}`, file, range: null, taskKey: null }];
  const { text, frozen } = read;
  const linted = JSON.stringify(frozen.manifest ?? null, null, 2);
  return inFrozenFile(await lintManifestText(linted, state.manifestFile, ctx), linted, text, file);
}

/** Findings of the linted text (`linted`) placed in the frozen file `file` (its text `text`): its name, the same value's range there. */
function inFrozenFile(findings: readonly Finding[], linted: string, text: string, file: string): Finding[] {
  const from = parseTree(linted);
  const to = parseTree(text);
  const toIndex = new LineIndex(text);
  return findings.map((f) => ({ ...f, file, range: f.range && from && to ? frozenRange(f.range, from, to, toIndex) : f.range }));
}

/** A range in the linted text → the same value's range in the frozen file (under its `manifest`). */
function frozenRange(range: SourceRange, from: Node, to: Node, toIndex: LineIndex): SourceRange {
  const start = frozenOffset(range.offset, from, to);
  const end = range.length ? frozenOffset(range.offset + range.length, from, to, true) : start;
  return toIndex.range(start, Math.max(0, end - start));
}

/**
 * An offset of the linted text → the frozen file's: the innermost value (or property name) holding it is found in the
 * frozen file by its JSON path; inside a string, number or name the offset keeps its distance from the value's start
 * (JSON.stringify wrote both the same way); at a container's end it goes to the container's end, else its start.
 */
function frozenOffset(offset: number, from: Node, to: Node, end = false): number {
  const node = findNodeAtOffset(from, offset, end);
  const root = findNodeAtLocation(to, ['manifest']);
  if (!node || !root) return root?.offset ?? 0;
  const isName = node.parent?.type === 'property' && node.parent.children?.[0] === node;
  // A property (the offset between its name and its value): the same property in the frozen file, found by its name.
  const key = node.type === 'property' ? (node.children?.[0]?.value as string | undefined) : undefined;
  const value = findNodeAtLocation(to, ['manifest', ...getNodePath(node), ...(key !== undefined ? [key] : [])]);
  const target = isName ? value?.parent?.children?.[0] : key !== undefined ? value?.parent : value;
  if (!target) return root.offset;
  if (node.type !== 'object' && node.type !== 'array') return target.offset + Math.min(offset - node.offset, target.length);
  return offset >= node.offset + node.length ? target.offset + target.length : target.offset;
}

/** The frozen file's text and its JSON, or why it cannot be read or parsed (the error's message). */
function readFrozen(file: string): { text: string; frozen: { manifest?: unknown } } | { error: string } {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return { text, frozen: JSON.parse(text) as { manifest?: unknown } };
  } catch (e) {
    return { error: (e as Error).message };
  }
}
