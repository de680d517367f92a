/**
 * The critique loop's state on disk, so that `verdict resume` (or `verdict rerun`) of a run whose orchestrator died or
 * was stopped goes on with the loop where it was (docs/workflows.md "Critique loop"): the next round, the time limit
 * counted from the loop's real start, the revisions already done counting toward `rounds`, the points a pending
 * revision was handed. One file per task, `runs/<run_id>/tasks/<key>/critique-loop.json`, beside the report; written
 * whole (write-file-atomic: a temp file renamed over it, so no reader ever sees half of it) after every change of the
 * loop. It lives in VERDICT_HOME, which every step's sandbox hides (run/containment.ts hiddenFromSteps), as the other
 * state a resumed orchestrator reads back (run/reattach.ts): no worker, critic or criticism command can write it.
 */
import fs from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import type { CheckedCriticism } from './criticism';
import type { CritiqueLoop, CritiqueRound } from './loop';

/** The file's format version; another version is refused. */
export const LOOP_FILE_VERSION = 1;

/** `<taskRunDir>/critique-loop.json` (taskRunDir: `runs/<run_id>/tasks/<key>`). */
export function critiqueLoopFile(taskRunDir: string): string {
  return path.join(taskRunDir, 'critique-loop.json');
}

/**
 * Writes `loop` to `file` whole (temp file, then rename; the folder is made when missing).
 * @throws Error from the file system (the caller's step then ends ERROR, saying why)
 */
export function saveLoop(file: string, loop: CritiqueLoop): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomic.sync(file, `${JSON.stringify({ version: LOOP_FILE_VERSION, ...loop })}\n`);
}

/**
 * The loop kept in `file`, or null when there is none (no round began before the orchestrator stopped).
 * @throws Error naming the file and the field when it is not a loop this version wrote
 */
export function loadLoop(file: string): CritiqueLoop | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`${file}: cannot be read: ${(e as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not JSON: ${(e as Error).message}`);
  }
  return parseLoop(value, file);
}

/**
 * `value` as a CritiqueLoop, checked field by field.
 * @throws Error `<file>: <field> …` for the first field that is missing or of the wrong type, or another version
 */
export function parseLoop(value: unknown, file: string): CritiqueLoop {
  const bad = (field: string, want: string) => new Error(`${file}: ${field} must be ${want}`);
  const obj = (v: unknown, field: string): Record<string, unknown> => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(field, 'an object');
    return v as Record<string, unknown>;
  };
  const int = (v: unknown, field: string): number => {
    if (!Number.isInteger(v) || (v as number) < 0) throw bad(field, 'a whole number ≥ 0');
    return v as number;
  };
  const str = (v: unknown, field: string): string => {
    if (typeof v !== 'string') throw bad(field, 'a string');
    return v;
  };
  const strOrNull = (v: unknown, field: string): string | null => (v === null ? null : str(v, field));
  const arr = (v: unknown, field: string): unknown[] => {
    if (!Array.isArray(v)) throw bad(field, 'an array');
    return v;
  };
  const criticism = (v: unknown, field: string): CheckedCriticism => {
    const c = obj(v, field);
    const common = { claim: str(c.claim, `${field}.claim`), critic: int(c.critic, `${field}.critic`), evidence: str(c.evidence, `${field}.evidence`) };
    if (typeof c.verified !== 'boolean') throw bad(`${field}.verified`, 'true or false');
    if ('command' in c) return { command: str(c.command, `${field}.command`), ...common, verified: c.verified };
    return { file: str(c.file, `${field}.file`), line: int(c.line, `${field}.line`), ...common, verified: c.verified };
  };
  const criticisms = (v: unknown, field: string) => arr(v, field).map((c, i) => criticism(c, `${field}[${i}]`));
  const round = (v: unknown, field: string): CritiqueRound => {
    const r = obj(v, field);
    return {
      round: int(r.round, `${field}.round`),
      attempt: int(r.attempt, `${field}.attempt`),
      sealed: strOrNull(r.sealed, `${field}.sealed`),
      criticisms: criticisms(r.criticisms, `${field}.criticisms`),
      criticErrors: arr(r.criticErrors, `${field}.criticErrors`).map((e, i) => str(e, `${field}.criticErrors[${i}]`)),
      decision: str(r.decision, `${field}.decision`),
    };
  };
  const o = obj(value, '(file)');
  if (o.version !== LOOP_FILE_VERSION) throw bad('version', String(LOOP_FILE_VERSION));
  if (typeof o.pending !== 'boolean') throw bad('pending', 'true or false');
  return {
    startedAt: o.startedAt === null ? null : int(o.startedAt, 'startedAt'),
    rounds: arr(o.rounds, 'rounds').map((r, i) => round(r, `rounds[${i}]`)),
    revisions: int(o.revisions, 'revisions'),
    lastSealed: strOrNull(o.lastSealed, 'lastSealed'),
    open: criticisms(o.open, 'open'),
    pending: o.pending,
    stopped: strOrNull(o.stopped, 'stopped'),
    unresolved: criticisms(o.unresolved, 'unresolved'),
    dropped: int(o.dropped, 'dropped'),
    base: strOrNull(o.base, 'base'),
  };
}
