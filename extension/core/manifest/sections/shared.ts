/**
 * Helpers the workflow sections' rules share (validate/, council/, phases/, generate/ rule.ts): where each task key
 * is, the compiled keys a workflow would take from another task, and whether a file a section names stays inside its
 * task dir. Pure.
 */
import type { WorkflowProblem } from './section';

/** Problems for compiled keys another task (of this file: `keys`, or of the run: `external`) already has. */
export function takenKeys(
  owner: string,
  compiled: readonly string[],
  at: (string | number)[],
  keys: ReadonlyMap<string, number>,
  external: ReadonlySet<string>,
  what: string,
): WorkflowProblem[] {
  const out: WorkflowProblem[] = [];
  for (const key of compiled) {
    const other = keys.get(key);
    if (external.has(key)) out.push({ path: at, message: `the ${what} "${key}" of "${owner}" would take a key the run already has; rename "${owner}"` });
    else if (other !== undefined)
      out.push({ path: at, message: `the ${what} "${key}" of "${owner}" would take the key of tasks[${other}]; rename one of them` });
  }
  return out;
}

/** Task key → its first index. */
export function keyIndex(tasks: readonly unknown[]): Map<string, number> {
  const keys = new Map<string, number>();
  tasks.forEach((t, i) => {
    if (isObject(t) && typeof t.key === 'string' && !keys.has(t.key)) keys.set(t.key, i);
  });
  return keys;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Why `file` is not a plain relative path inside a folder (absolute, `..`, a backslash, a NUL), or null. */
export function unsafeRelativePath(file: string): string | null {
  if (file.startsWith('/')) return `"${file}" is absolute`;
  if (file.includes('\\') || file.includes('\0')) return `"${file}" contains a backslash or a NUL`;
  if (file.split('/').some((seg) => seg === '..')) return `"${file}" climbs out with ".."`;
  if (file.split('/').every((seg) => seg === '' || seg === '.')) return `"${file}" names the task dir itself`;
  return null;
}
