import path from 'node:path';
import { frozenManifestPath } from '../run/frozen-manifest';
import type { ArtifactKind } from '../../../schemas/protocol';
import { attemptDir } from '../config/home';
import type { RunInfo } from '../live/registry';
import { readFileTail } from './log-tail';

/** Most bytes of one artifact sent to a page; longer files send their tail. */
export const ARTIFACT_MAX_BYTES: Record<ArtifactKind, number> = {
  manifest: 256 * 1024,
  prompt: 256 * 1024,
  'check-output': 64 * 1024,
  'worker-log': 64 * 1024,
};

const FILE: Record<Exclude<ArtifactKind, 'manifest'>, string> = { prompt: 'prompt.md', 'check-output': 'check.log', 'worker-log': 'worker.log' };

/**
 * Reads one file of a run for a page: the frozen manifest, or an attempt's prompt.md / check.log / worker.log.
 * Only runs the registry knows and attempts their state lists are read, and every path is built from validated ids
 * (protocol SAFE_ID), so a page can name nothing outside `<home>/runs`. Never throws: `error` says what went wrong.
 */
export function loadArtifact(
  home: string,
  info: RunInfo | undefined,
  req: { artifact: ArtifactKind; key?: string; attempt?: number },
): { text: string | null; truncatedBytes: number; error: string | null } {
  if (!info) return { text: null, truncatedBytes: 0, error: 'no such run' };
  const runId = info.state.runId;
  let file: string;
  if (req.artifact === 'manifest') file = frozenManifestPath(home, runId);
  else {
    const task = info.state.tasks.find((t) => t.key === req.key);
    if (!task || req.attempt === undefined || !task.attempts.some((a) => a.attempt === req.attempt))
      return { text: null, truncatedBytes: 0, error: 'no such attempt' };
    file = path.join(attemptDir(home, runId, task.key, req.attempt), FILE[req.artifact]);
  }
  const tail = readFileTail(file, ARTIFACT_MAX_BYTES[req.artifact]);
  if (!tail) return { text: null, truncatedBytes: 0, error: `not written yet: ${path.basename(file)}` };
  return { text: tail.text, truncatedBytes: tail.truncatedBytes, error: null };
}
