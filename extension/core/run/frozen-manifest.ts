import fs from 'node:fs';
import path from 'node:path';
import { runDir } from '../config/home';
import type { RunState } from '../live/state';
import { parseManifest } from '../manifest/load';
import { formatProblem, type Manifest } from '../manifest/types';

/** `<home>/runs/<runId>/manifest.json`: the manifest exactly as the run loaded it, `{ source, manifest }`. */
export function frozenManifestPath(home: string, runId: string): string {
  return path.join(runDir(home, runId), 'manifest.json');
}

/** Freezes the manifest a run starts with, so rerun, resume and merge work however the file changes later. */
export function writeFrozenManifest(home: string, runId: string, manifest: Manifest): void {
  fs.writeFileSync(frozenManifestPath(home, runId), JSON.stringify({ source: manifest.file, manifest: manifest.raw }, null, 2));
}

/**
 * Loads a run's frozen manifest as a Manifest, relative paths resolved against the original manifest's folder.
 * @throws Error naming the frozen file when it cannot be read or no longer loads (e.g. an engine since removed)
 */
export function loadFrozenManifest(home: string, state: RunState, engines?: ReadonlySet<string>): Manifest {
  const file = frozenManifestPath(home, state.runId);
  let frozen: { manifest?: unknown };
  try {
    frozen = JSON.parse(fs.readFileSync(file, 'utf8')) as { manifest?: unknown };
  } catch (e) {
    throw new Error(`cannot read the frozen manifest ${file}: ${(e as Error).message}`);
  }
  const { manifest, problems } = parseManifest(JSON.stringify(frozen.manifest ?? null), state.manifestFile, { engines });
  if (!manifest) throw new Error(`the frozen manifest ${file} no longer loads: ${problems.filter((p) => p.severity === 'error').map(formatProblem).join('; ')}`);
  return manifest;
}
