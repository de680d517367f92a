/**
 * What a ranking reviewer is given of each passing candidate (docs/workflows.md "Ranked"): its work as the check judged
 * it — the diff of its sealed commit in worktree mode, its task dir's files in plain mode — COPIED into the reviewer's
 * own scratch dir under the candidate's neutral name (`A.diff`, or the folder `A/`), so that nothing the reviewer can
 * reach names the candidate's key (`<key>--c<N>`), task dir, branch, engine or model. The candidates' own dirs stay
 * hidden from its sandbox.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Seal, WorktreeLinks } from '../../../git/worktree';
import { diffMaterial, filesMaterial, type ReviewMaterial } from '../../review-material';

/** Bytes of a plain-mode candidate's files copied for a reviewer; past it the rest is left out (and said). */
export const RANK_COPY_BYTES = 16 * 1024 * 1024;
/** Files copied per candidate. */
const RANK_COPY_FILES = 5000;

/** Where a passing candidate's work is read from. */
export type CandidateSource =
  | { mode: 'worktree'; git: Pick<WorktreeLinks, 'dir' | 'adminDir' | 'commonDir'>; seal: Pick<Seal, 'parent' | 'sha' | 'changed'> }
  | { mode: 'plain'; dir: string };

/**
 * One candidate's material: the diff (worktree mode) or the listing and text of its files (plain mode), both without
 * the engines' own folders at the top of its tree (engineFolders of `engines`), as its copied files are.
 * @param timeoutMs git's limit, ms
 * @param engines names of the run's engines
 * @throws Error from git (worktree mode)
 */
export async function candidateMaterial(source: CandidateSource, timeoutMs: number, engines: readonly string[]): Promise<ReviewMaterial> {
  const leaveOut = engineFolders(engines);
  return source.mode === 'worktree' ? diffMaterial(source.git, source.seal, timeoutMs, leaveOut) : filesMaterial(source.dir, leaveOut);
}

/**
 * The engines' own project folders at the top of a candidate's tree (`.claude`, `.codex`, `.opencode`… one per engine
 * of the run, `.<name>`): a tool writes them (settings, sessions, caches), and they name the engine, so a ranking
 * reviewer's material and copies never hold them. Pure.
 */
export function engineFolders(engines: readonly string[]): string[] {
  return engines.map((e) => `.${e}`);
}

/**
 * What gives a candidate's identity away in its own files, written by tools rather than chosen by the worker: its
 * task dir's path and candidate keys (`<group>--c<N>`, e.g. in a cache file the check wrote, or a log), and the
 * engines' own project folders (`.claude/`, `.codex/`…). Keys and paths are replaced by `[candidate]` in text; a
 * binary file holding one is left out; the engines' folders are not copied.
 */
export interface Redaction {
  /** Absolute task dirs of the group's candidates. */
  dirs: string[];
  /** The group's key: `<group>--c<N>` is a candidate key. */
  group: string;
  /** Names of the run's engines: `.<name>` folders and files at the top of a candidate's dir are not copied. */
  engines: string[];
}

/** `text` with every candidate dir and key replaced by `[candidate]`. */
export function redact(text: string, r: Redaction): string {
  let out = text;
  for (const d of [...r.dirs].sort((a, b) => b.length - a.length)) out = out.split(d).join('[candidate]');
  return out.replace(new RegExp(`${escapeRegExp(r.group)}--c\\d+`, 'g'), '[candidate]');
}

/**
 * Writes each candidate's material into `scratch` under its name: `<name>.diff` (worktree mode) or `<name>.txt` plus a
 * copy of its files in `<name>/` (plain mode), redacted (Redaction). Returns the names written, for the prompt,
 * relative to `scratch`.
 */
export function writeRankMaterial(
  scratch: string,
  work: readonly { name: string; source: CandidateSource; material: ReviewMaterial }[],
  r: Redaction,
): string[] {
  const written: string[] = [];
  for (const w of work) {
    if (w.source.mode === 'worktree') {
      fs.writeFileSync(path.join(scratch, `${w.name}.diff`), redact(w.material.text, r));
      written.push(`${w.name}.diff`);
      continue;
    }
    fs.writeFileSync(path.join(scratch, `${w.name}.txt`), redact(w.material.text, r));
    const left = copyFiles(w.source.dir, path.join(scratch, w.name), r);
    written.push(
      `${w.name}/${left ? ` (${left} file(s) left out: past ${RANK_COPY_BYTES / 1024 / 1024} MiB or ${RANK_COPY_FILES} files, or binary naming a candidate)` : ''}`,
      `${w.name}.txt`,
    );
  }
  return written;
}

/**
 * Copies the regular files and folders under `src` into `dest` (created), without `.git` or the engines' own folders,
 * never following a symlink (a link is left out: it could point at another candidate's dir), at most RANK_COPY_BYTES
 * and RANK_COPY_FILES, text redacted (a binary file naming a candidate is left out). Returns how many files were left
 * out. Unreadable entries are skipped. Never throws but for `dest`.
 */
export function copyFiles(src: string, dest: string, r: Redaction): number {
  const engineDirs = new Set(engineFolders(r.engines));
  fs.mkdirSync(dest, { recursive: true });
  let bytes = 0;
  let files = 0;
  let left = 0;
  const walk = (rel: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(src, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const child = rel ? path.join(rel, e.name) : e.name;
      if (!rel && engineDirs.has(e.name)) continue;
      if (e.isDirectory()) {
        if (e.name === '.git') continue;
        fs.mkdirSync(path.join(dest, child), { recursive: true });
        walk(child);
      } else if (e.isFile()) {
        const st = fs.lstatSync(path.join(src, child), { throwIfNoEntry: false });
        if (!st?.isFile()) continue;
        if (files >= RANK_COPY_FILES || bytes + st.size > RANK_COPY_BYTES) {
          left++;
          continue;
        }
        let content: Buffer;
        try {
          content = fs.readFileSync(path.join(src, child));
        } catch {
          continue; // unreadable: left out
        }
        const text = content.toString('utf8');
        const clean = redact(text, r);
        if (clean !== text && content.includes(0)) {
          left++;
          continue;
        }
        try {
          fs.writeFileSync(path.join(dest, child), clean === text ? content : clean, { mode: st.mode & 0o755, flag: 'wx' });
        } catch {
          continue; // unwritable name: left out
        }
        files++;
        bytes += st.size;
      }
    }
  };
  walk('');
  return left;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
