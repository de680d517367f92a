/**
 * Guard `stubs`: placeholders and stubs in lines the worker added — work left undone but handed in. Markers only in
 * the forms that mean "not done" in the language they come from, so a todo-list app's `status: 'TODO'` or Python's
 * `return NotImplemented` (the binary-operator protocol, not a stub) is not flagged:
 * - `TODO` / `FIXME` after a comment marker (`#`, `//`, `/*`, `*`, `<!--`, `--`) or followed by `:` or `(`
 *   (`TODO: …`, `TODO(me)`, Kotlin's `TODO()`);
 * - `NotImplementedError` (Python), `NotImplementedException` (.NET);
 * - a throw, raise or panic whose message says not implemented, unimplemented or todo
 *   (`throw new Error('not implemented')`, `panic("TODO")`, `raise RuntimeError("not yet implemented")`);
 * - Rust's `unimplemented!()` and `todo!()`;
 * - `pass` or `...` with a comment saying stub, todo or placeholder (`pass  # stub`), and a comment that is only
 *   "stub" or "placeholder" (`// stub`, `# placeholder implementation`).
 * Generated files (lock files, `go.sum`) are not read.
 */
import path from 'node:path';
import type { GuardFinding, Line } from './types';

const RULES: { what: string; re: RegExp }[] = [
  { what: 'a TODO/FIXME marker', re: /(?:#|\/\/|\/\*|<!--|--|^\s*\*).*?\b(?:TODO|FIXME)\b|\b(?:TODO|FIXME)\s*[:(]/ },
  { what: 'a not-implemented error', re: /\bNotImplemented(?:Error|Exception)\b/ },
  { what: 'a not-implemented throw', re: /\b(?:throw|raise|panic)\b.*?["'`]\s*(?:not\s+(?:yet\s+)?implemented|unimplemented|todo)\b/i },
  { what: 'a Rust placeholder macro', re: /\b(?:unimplemented|todo)!\s*[([{]/ },
  { what: 'a stub body', re: /^\s*(?:pass|\.\.\.)\s*#\s*(?:stub|todo|placeholder)\b/i },
  { what: 'a stub comment', re: /(?:#|\/\/|\/\*)\s*(?:stub|placeholder)(?:\s+implementation)?\s*(?:[.:!-]|\*\/|$)/i },
];

/** Generated files whose lines a worker does not write by hand. */
const GENERATED = new Set([
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'Cargo.lock',
  'go.sum',
  'poetry.lock',
  'uv.lock',
  'Pipfile.lock',
  'composer.lock',
  'Gemfile.lock',
]);

/** Placeholders in `lines` (the lines the worker added to `file`), at most one finding per line. */
export function findStubs(file: string, lines: readonly Line[]): GuardFinding[] {
  if (GENERATED.has(path.posix.basename(file))) return [];
  const out: GuardFinding[] = [];
  for (const { line, text } of lines) {
    const rule = RULES.find((r) => r.re.test(text));
    if (rule) out.push({ guard: 'stubs', file, line, message: `${rule.what}: \`${clip(text.trim())}\`; finish the work instead of leaving a placeholder` });
  }
  return out;
}

function clip(s: string): string {
  return s.length > 100 ? `${s.slice(0, 97)}...` : s;
}
