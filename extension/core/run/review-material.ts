/**
 * What reviewers read of the work (run/steps/review.ts): in worktree mode the diff of the sealed commit against the
 * task branch's head it was built on (the task's start point until a PASS moves the branch), in plain mode — where
 * there is nothing to diff against — the task dir's files: every path with its size, then the contents of text
 * files in path order. Both are cut at REVIEW_MATERIAL_BYTES; the reviewer can read the rest of the (read-only) task
 * dir itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import { commitDiff } from '../git/diff';
import type { Seal, WorktreeLinks } from '../git/worktree';

/** Bytes of diff or file contents written for the reviewers (the prompt carries at most REVIEW_PROMPT_MATERIAL_BYTES). */
export const REVIEW_MATERIAL_BYTES = 1024 * 1024;
/** Files listed in plain mode. */
const MAX_LISTED_FILES = 2000;
/** A plain-mode file larger than this is listed, not shown, bytes. */
const MAX_SHOWN_FILE_BYTES = 256 * 1024;

/** What the reviewers are given. */
export interface ReviewMaterial {
  /** One line for the prompt: what `text` is. */
  kind: string;
  text: string;
  truncated: boolean;
}

/**
 * Worktree mode: the diff `seal.parent..seal.sha` (empty when the worker changed nothing), without the top-level
 * entries named in `leaveOut` (a ranking reviewer's: the engines' own folders, rank-material.ts engineFolders).
 * @throws Error from git
 */
export async function diffMaterial(
  links: Pick<WorktreeLinks, 'dir' | 'adminDir' | 'commonDir'>,
  seal: Pick<Seal, 'parent' | 'sha' | 'changed'>,
  timeoutMs: number,
  leaveOut: readonly string[] = [],
): Promise<ReviewMaterial> {
  const kind = `the diff of the work (git diff --stat --patch ${seal.parent.slice(0, 12)} ${seal.sha.slice(0, 12)}: the task's start point → the sealed commit the check passed${leftOutNote(leaveOut)})`;
  if (!seal.changed) return { kind, text: '(no changes: the worker changed no file git tracks)\n', truncated: false };
  const d = await commitDiff(links, seal.parent, seal.sha, REVIEW_MATERIAL_BYTES, timeoutMs, leaveOut);
  return { kind, ...d };
}

/** `; without <a>/, <b>/ at the top` for a material kind line; '' when nothing is left out. */
function leftOutNote(leaveOut: readonly string[]): string {
  return leaveOut.length ? `; without ${leaveOut.map((p) => `${p}/`).join(', ')} at the top (the engines' own folders)` : '';
}

/**
 * Plain mode: the task dir's files (no `.git`, nor the top-level entries named in `leaveOut`), listed with sizes, then
 * the text ones shown. Never throws.
 */
export function filesMaterial(dir: string, leaveOut: readonly string[] = []): ReviewMaterial {
  const files: { rel: string; size: number }[] = [];
  const walk = (rel: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (files.length >= MAX_LISTED_FILES) return;
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (!rel && leaveOut.includes(e.name)) continue;
      if (e.isDirectory()) {
        if (e.name !== '.git') walk(child);
      } else if (e.isFile()) {
        files.push({ rel: child, size: fs.lstatSync(path.join(dir, child), { throwIfNoEntry: false })?.size ?? 0 });
      } else if (e.isSymbolicLink()) {
        files.push({ rel: `${child} -> ${safeReadlink(path.join(dir, child))}`, size: 0 });
      }
    }
  };
  walk('');
  const parts = [`${files.length}${files.length >= MAX_LISTED_FILES ? '+' : ''} file(s):`, ...files.map((f) => `  ${f.rel} (${f.size} bytes)`), ''];
  let bytes = Buffer.byteLength(parts.join('\n'));
  let truncated = false;
  for (const f of files) {
    if (f.rel.includes(' -> ') || f.size > MAX_SHOWN_FILE_BYTES) continue;
    let content: Buffer;
    try {
      content = fs.readFileSync(path.join(dir, f.rel));
    } catch {
      continue;
    }
    if (content.includes(0)) continue; // binary
    const block = `=== ${f.rel}\n${content.toString('utf8')}${content.length && content[content.length - 1] !== 0x0a ? '\n' : ''}`;
    if (bytes + Buffer.byteLength(block) > REVIEW_MATERIAL_BYTES) {
      truncated = true;
      break;
    }
    parts.push(block);
    bytes += Buffer.byteLength(block);
  }
  return {
    kind: `the files of the task dir as the check judged them (plain mode: no history to diff against), then the contents of its text files${leftOutNote(leaveOut)}`,
    text: parts.join('\n'),
    truncated,
  };
}

function safeReadlink(p: string): string {
  try {
    return fs.readlinkSync(p);
  } catch {
    return '?';
  }
}
