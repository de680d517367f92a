/**
 * The critique loop's reading of a critic's answer (docs/workflows.md "Critique loop"): the answer out of its final
 * message, validated against schemas/critique-answer.schema.json, and the checks on a criticism that need no process
 * (a safe relative path; a line that exists in a file's text). Running a criticism's command is run/workflows/critique/step.ts.
 * No I/O.
 */
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { validateCritiqueAnswer } from '../../../../../schemas/generated/validateCritiqueAnswer.js';
import type { CommandCriticism, Criticism } from './criticism';
import { preview, tryJson } from '../../review-verdict';

/** A valid critic answer (schemas/critique-answer.schema.json; other fields dropped). */
export interface CritiqueAnswer {
  criticisms: Criticism[];
}

/** The answer schema's validator, compiled at build time (schemas/validators.build.mjs). */
const validateAnswer = (): ValidateFunction<CritiqueAnswer> => validateCritiqueAnswer as ValidateFunction<CritiqueAnswer>;

/** The answer in a critic's final message, or why there is none (one line: that is the critic's ERROR). */
export type ParsedCritique = { ok: true; answer: CritiqueAnswer } | { ok: false; error: string };

/**
 * Reads a critic's answer from its final message, as parseReviewAnswer reads a reviewer's: the whole message (trimmed)
 * when it is JSON, else the last fenced code block that is; nothing picked out of prose. The value must match
 * schemas/critique-answer.schema.json (each criticism exactly one of `{file, line, claim}` or `{command, claim}`).
 * Never throws.
 */
export function parseCritiqueAnswer(message: string | null): ParsedCritique {
  if (message === null || !message.trim()) return { ok: false, error: 'the critic gave no final message' };
  let value = tryJson(message.trim());
  if (value === undefined) {
    const fenced = [...message.matchAll(/```[A-Za-z]*[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```/g)].map((m) => m[1] as string).reverse();
    value = fenced.map(tryJson).find((v) => v !== undefined);
    if (value === undefined) return { ok: false, error: `the critic's final message is not JSON: ${preview(message)}` };
  }
  const validate = validateAnswer();
  if (!validate(value)) {
    const problems = (validate.errors ?? [])
      .filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'not' && e.keyword !== 'anyOf')
      .map((e) => `${e.instancePath || '(answer)'} ${e.message ?? 'is invalid'}`);
    const oneOf = (validate.errors ?? [])
      .filter((e) => e.keyword === 'oneOf')
      .map((e) => `${e.instancePath} must be either {file, line, claim} or {command, claim}`);
    return { ok: false, error: `the critic's answer does not match schemas/critique-answer.schema.json: ${[...new Set([...oneOf, ...problems])].join('; ')}` };
  }
  return {
    ok: true,
    answer: {
      criticisms: value.criticisms.map((c): Criticism =>
        'command' in c ? { command: c.command, claim: c.claim } : { file: c.file, line: c.line, claim: c.claim },
      ),
    },
  };
}

/** True for a criticism that names a command (else it names a file and line). */
export function isCommand(c: Criticism): c is CommandCriticism {
  return 'command' in c;
}

/**
 * `file` as a normalized path relative to the proposal's root (`a/./b` → `a/b`), or why it cannot name a file of the
 * proposal: empty, absolute, leaving the root (`..`), or inside `.git`.
 */
export function proposalPath(file: string): { ok: true; rel: string } | { ok: false; why: string } {
  if (file.includes('\0')) return { ok: false, why: 'the path holds a NUL byte' };
  if (path.posix.isAbsolute(file) || /^[A-Za-z]:[\\/]/.test(file))
    return { ok: false, why: `${file} is absolute; a criticism names a path relative to the proposal` };
  const rel = path.posix.normalize(file.replace(/\\/g, '/')).replace(/\/+$/, '');
  if (rel === '.' || rel === '') return { ok: false, why: 'the path names no file' };
  if (rel === '..' || rel.startsWith('../')) return { ok: false, why: `${file} is outside the proposal` };
  if (rel === '.git' || rel.startsWith('.git/')) return { ok: false, why: `${file} is inside .git, not the proposal` };
  return { ok: true, rel };
}

/** Lines in `text`: a final newline ends the last line, it does not start another (`a\nb\n` has 2). */
export function lineCount(text: string): number {
  if (text === '') return 0;
  const n = text.split('\n').length;
  return text.endsWith('\n') ? n - 1 : n;
}
