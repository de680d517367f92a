import fs from 'node:fs';
import path from 'node:path';
import { findNodeAtLocation, type Node } from 'jsonc-parser';
import { commandWords, simpleCommands, unquote, type ShellWord } from './shell';
import { hasFileExtension, normalizeRelative, placeOf } from './task-paths';
import type { LintDocument, Rule, RuleFinding } from './document';

/** Commands whose first argument that is not an option is a pattern or a program, not a file. */
const PATTERN_FIRST = new Set(['grep', 'egrep', 'fgrep', 'rg', 'sed', 'awk', 'gawk', 'jq', 'yq', 'expr']);
/** Options whose next word is code or a pattern (`python -c`, `node -e`, `grep -e`), not a file. */
const CODE_OPTIONS = new Set(['-c', '-e', '-p', '--eval', '--print', '--regexp', '-m', '-k', '--grep', '-g']);
/** Commands whose arguments are files they make, or text: none is looked for. */
const MAKES_FILES = new Set(['mkdir', 'touch', 'tee', 'rm', 'rmdir', 'ln', 'cp', 'mv', 'install', 'echo', 'printf', 'curl', 'wget', 'git']);
/** Commands that change the folder later words are read from: a check holding one is not judged. */
const CHANGES_FOLDER = new Set(['cd', 'pushd', 'popd']);
/** Folders that builds and installers make (a check may build first and then run what it built): never judged. */
const MADE_FOLDERS = new Set(['dist', 'build', 'out', 'target', 'node_modules', '.venv', 'venv', 'coverage', '__pycache__', '.next', '.cache', 'lib']);
/** A word that is a redirection on its own (`>`, `2>>`, `&>`, `<`): the next word is its file. */
const REDIRECT_ALONE = /^(?:\d*[<>]{1,2}|&>{1,2}|\d*>&|[<>]\()$/;

/**
 * check-file-missing (warning), worktree mode: a file a check names (a script it runs, a test file it passes to the
 * runner, a file it reads) or a literal `protect` entry that exists neither in the repository nor among any task's
 * `expect_files` (nor `include`): the check then fails on every attempt whatever the worker does (`node --test
 * test/x.test.mjs` with no such test), or protects nothing. A word counts as a file when it has a `/` or a known file
 * extension and no variable, glob, URL, option or redirection; the pattern of grep/sed/awk/jq and the code after `-c`/
 * `-e` are not files, nor anything under the folders builds make (dist/, build/, target/, node_modules/ …); a check that
 * changes folder (`cd`) is not judged. The repository is the git top folder found from `repo` by looking for `.git`,
 * and a file is looked for there on disk. Only the file system is read: nothing in the check or the repository runs,
 * so a hostile repository's manifest is safe to lint.
 */
export const checkFileMissing: Rule = (doc) => {
  if (!doc.worktrees) return [];
  const top = gitTop(doc.repo);
  if (!top) return [];
  const provided = new Set<string>();
  for (const task of doc.tasks) for (const f of task.expectFiles ?? []) if (placeOf(f.value) === 'inside') provided.add(normalizeRelative(f.value));
  if (Array.isArray(doc.raw.include)) for (const f of doc.raw.include) if (typeof f === 'string') provided.add(normalizeRelative(f));
  const known = new Map<string, boolean>();
  const missing = (rel: string): boolean => {
    if (provided.has(rel) || [...provided].some((p) => p.startsWith(`${rel}/`))) return false;
    let hit = known.get(rel);
    if (hit === undefined) known.set(rel, (hit = !exists(top, rel)));
    return hit;
  };
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const check = task.check;
    if (check && task.checkScript) {
      const seen = new Set<string>();
      for (const word of fileWords(task.checkScript)) {
        const written = unquote(word.raw);
        const rel = normalizeRelative(written);
        if (seen.has(rel) || !missing(rel)) continue;
        seen.add(rel);
        out.push({
          rule: 'check-file-missing',
          severity: 'warning',
          message: `The check names ${written}, which is neither in the repository (${top}) nor in any task's expect_files: it would fail on every attempt whatever the worker does. Add the file to the repository, list it in expect_files of the task that writes it, or fix the path.`,
          range: check.rangeOf(word.start, word.end),
          taskKey: task.key,
        });
      }
    }
    out.push(...protectFindings(doc, task.node, task.key, top, missing));
  }
  out.push(...protectFindings(doc, doc.root, null, top, missing));
  return out;
};

/** Findings for the literal (glob-free, not `!`) entries of `protect` under `node` that name nothing. */
function protectFindings(doc: LintDocument, node: Node, taskKey: string | null, top: string, missing: (rel: string) => boolean): RuleFinding[] {
  const list = findNodeAtLocation(node, ['protect']);
  if (list?.type !== 'array') return [];
  const out: RuleFinding[] = [];
  for (const entry of list.children ?? []) {
    if (entry.type !== 'string') continue;
    const value = String(entry.value);
    if (!value || value.startsWith('!') || /[*?[\]{}]/.test(value) || placeOf(value) !== 'inside') continue;
    const rel = normalizeRelative(value);
    if (!missing(rel)) continue;
    out.push({
      rule: 'check-file-missing',
      severity: 'warning',
      message: `"protect" names ${rel}, which is neither in the repository (${top}) nor in any task's expect_files, so it protects nothing. Fix the path, or use a glob for files to come.`,
      range: doc.index.range(entry.offset, entry.length),
      taskKey,
    });
  }
  return out;
}

/** The words of a check that name files (see checkFileMissing); none at all when the check changes folder. */
function fileWords(lists: Parameters<typeof simpleCommands>[0]): ShellWord[] {
  const out: ShellWord[] = [];
  for (const command of simpleCommands(lists)) {
    const words = commandWords(command);
    const name = words[0] ? path.basename(unquote(words[0].raw)) : '';
    if (CHANGES_FOLDER.has(name)) return [];
    if (MAKES_FILES.has(name)) continue;
    let patternPending = PATTERN_FIRST.has(name);
    let skipNext = false;
    words.forEach((word, i) => {
      const raw = word.raw;
      if (skipNext) {
        skipNext = false;
        return;
      }
      if (REDIRECT_ALONE.test(raw)) {
        skipNext = !raw.startsWith('<') || raw === '<(';
        return;
      }
      if (/^\d*[<>&]/.test(raw)) return; // a redirection glued to its file (`>out.txt`, `2>/dev/null`)
      if (i > 0 && raw.startsWith('-')) {
        if (CODE_OPTIONS.has(raw)) skipNext = true;
        return;
      }
      if (i > 0 && patternPending) {
        patternPending = false;
        return;
      }
      if (looksLikeFile(raw)) out.push(word);
    });
  }
  return out;
}

/** A word that reads as a relative file path: a `/` or a known extension; no variable, glob, URL, `~`, `=` or `..`. */
function looksLikeFile(raw: string): boolean {
  if (/[$`*?[\]{}~=:;|&<>()\s]/.test(raw)) return false;
  const value = unquote(raw);
  if (!value || value.startsWith('/') || value.startsWith('-')) return false;
  if (!value.includes('/') && !hasFileExtension(value)) return false;
  const rel = normalizeRelative(value);
  if (rel === '.' || rel === '..' || rel.startsWith('../')) return false;
  return !MADE_FOLDERS.has(rel.split('/')[0] ?? '');
}

/** The top folder of the git repository holding `dir` (the nearest folder with a `.git` entry), or null. Reads only the file system. */
function gitTop(dir: string): string | null {
  for (let at = dir; ; at = path.dirname(at)) {
    if (exists(at, '.git')) return at;
    if (path.dirname(at) === at) return null;
  }
}

/** Whether `rel` exists under `top` (a dangling symlink counts: it is in the repository). */
function exists(top: string, rel: string): boolean {
  try {
    return fs.lstatSync(path.join(top, rel), { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}
