import path from 'node:path';
import { evalLogPath, resolveHome, runDir } from '../core/config/home';
import { gitFor, NO_DIFF_PROGRAMS } from '../core/git/safe-git';
import { archivesLogPath, createArchive, type ArchiveGit, type ArchiveResult } from '../core/store/archive';
import { InputError, type Io } from './io';

/** Flags of `verdict archive`. */
export interface ArchiveFlags {
  home?: string;
  /** The archive to write (default `./verdict-<run_id>.tar`); an existing file is never overwritten. */
  out?: string;
  json?: boolean;
}

/** The git an archive needs, through gitFor (no external diff, no textconv, no repository programs). */
export function archiveGit(repo: string): ArchiveGit {
  const git = gitFor(repo);
  return {
    async tip(branch) {
      try {
        return (await git.raw(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`])).trim() || null;
      } catch {
        return null;
      }
    },
    diff: (base, tip) => git.raw(['diff', ...NO_DIFF_PROGRAMS, '--binary', `${base}..${tip}`, '--']),
    async bundle(file, refs, base) {
      await git.raw(['bundle', 'create', '--quiet', file, ...refs, `^${base}`]);
    },
  };
}

/**
 * `verdict archive RUN_ID [--home DIR] [--out FILE]`: writes one tar with the run's frozen manifest, every attempt's
 * prompt, logs and receipt, its eval rows, each task's diff and the task branches as a git bundle, plus a SHA-256
 * manifest (SHA256SUMS) whose hash is recorded in `<home>/archives.jsonl`.
 * @returns 0 when written
 * @throws InputError (exit 2): unknown run, an existing --out file, a git error
 */
export async function archiveCommand(runId: string, flags: ArchiveFlags, io: Io): Promise<number> {
  const home = resolveHome(flags.home);
  const out = path.resolve(flags.out ?? `verdict-${runId}.tar`);
  let result: ArchiveResult;
  try {
    result = await createArchive({ runId, runDir: runDir(home, runId), evalLog: evalLogPath(home), archivesLog: archivesLogPath(home), git: archiveGit }, out);
  } catch (e) {
    throw new InputError(`cannot archive run ${runId}: ${(e as Error).message}`);
  }
  if (flags.json) {
    io.out(JSON.stringify(result, null, 2));
    return 0;
  }
  io.out(`${result.file}: run ${runId}, ${result.members.length} members, ${result.record.bytes} bytes`);
  io.out(`SHA256SUMS sha256 ${result.record.manifest_sha256} recorded in ${archivesLogPath(home)}`);
  for (const n of result.notes) io.out(`note: ${n}`);
  io.out(`check it later with: verdict verify-archive ${result.file}${flags.home ? ` --home ${home}` : ''}`);
  return 0;
}
