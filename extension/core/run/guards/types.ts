/**
 * What the built-in guards read and report (the `guard` step, run/steps/guard.ts): the files the worker added,
 * changed or deleted, each with its text before and after, and findings that name a file and, where one applies, a
 * line.
 */
import type { GuardSwitches } from '../../manifest/types';
import { showName } from '../../fs/byte-names';

export type { GuardSwitches } from '../../manifest/types';

/** One line of a file: its 1-based number and its text (without the line break). */
export interface Line {
  line: number;
  text: string;
}

/** What a worker did to one path, relative to the task dir (`/`-separated). */
export interface Change {
  path: string;
  /** `renamed` only in worktree mode (git's rename detection); `before` is then the old path's content. */
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  /** For `renamed`: the path it came from. */
  from?: string;
  /** What the path is now (for `deleted`: what it was). */
  kind: 'file' | 'symlink' | 'other';
  /** For a symlink: its target as written (now). */
  target?: string;
  /** The text before (null: none, binary, or too large to read); for a new file null. */
  before: string | null;
  /** The text now (null: deleted, binary, or too large to read). */
  after: string | null;
  /** The content is not text (a NUL byte in its first 8000 bytes, as git decides) or larger than GUARD_TEXT_BYTES. */
  unreadable?: 'binary' | 'large';
}

/** One thing a guard refuses: `file:line: message` (line null when none applies, e.g. a deleted file). */
export interface GuardFinding {
  guard: keyof GuardSwitches;
  file: string;
  line: number | null;
  message: string;
}

/** Files larger than this are not read line by line, bytes (their path is still judged). */
export const GUARD_TEXT_BYTES = 2 * 1024 * 1024;

/** `file:line: message` (or `file: message`), the file as people read it (fs/byte-names.ts showName). */
export function formatFinding(f: GuardFinding): string {
  return `${showName(f.file)}${f.line !== null ? `:${f.line}` : ''}: ${f.message}`;
}

/** Whether `buf` holds text as git decides it (git's buffer_is_binary: no NUL byte in the first 8000 bytes). */
export function isText(buf: Buffer): boolean {
  return !buf.subarray(0, 8000).includes(0);
}

/**
 * The lines of `after` that are new: each line of `after`, in order, that `before` does not hold as many times
 * (a multiset comparison: moving a line is not adding it; a second copy of an existing line is added). With
 * `before` null every line is new. O(lines); no diff algorithm, so a hostile file cannot make it slow.
 */
export function addedLines(before: string | null, after: string): Line[] {
  const seen = new Map<string, number>();
  if (before !== null) for (const l of splitLines(before)) seen.set(l, (seen.get(l) ?? 0) + 1);
  const out: Line[] = [];
  splitLines(after).forEach((text, i) => {
    const n = seen.get(text) ?? 0;
    if (n > 0) seen.set(text, n - 1);
    else out.push({ line: i + 1, text });
  });
  return out;
}

/** Lines without their breaks (`\n` or `\r\n`); a final break does not start an empty line. */
export function splitLines(text: string): string[] {
  if (!text) return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}
