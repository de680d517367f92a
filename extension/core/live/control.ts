import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../fs/lock';
import type { ControlAck, ControlVerb, TaskState } from '../../../schemas/run-state';

/**
 * A run's control channel: `runs/<run_id>/control.jsonl`, append-only, one JSON command a line, appended under the
 * cross-process lock by whoever controls the run (the CLI, later the extension and the dashboard); read by the run's
 * orchestrator by byte offset, which acknowledges every command in state.json (`control`, see schemas/run-state.ts).
 */
export type { ControlAck, ControlVerb };

/**
 * Every verb a person sends (the CLI, the editor, MCP); `stop` and `rerun` name a task, `unwait` an engine, the others
 * the whole run. The orchestrator also knows `record` (see ControlVerb), which names a task and carries `landed`.
 */
export const CONTROL_VERBS: readonly ControlVerb[] = ['stop', 'cancel', 'pause', 'resume', 'drain', 'rerun', 'unwait'];
const KNOWN_VERBS: readonly string[] = [...CONTROL_VERBS, 'record'];
const TASK_VERBS: ReadonlySet<string> = new Set(['stop', 'rerun', 'record']);

/** What a `record` command puts on its task: `merged` or `discarded` (schemas/run-state.ts TaskState). */
export type Landed = Pick<TaskState, 'merged'> | Pick<TaskState, 'discarded'>;
const ENGINE_VERBS: ReadonlySet<string> = new Set(['unwait']);

/** One line of control.jsonl. Times epoch ms. */
export interface ControlCommand {
  id: string;
  verb: ControlVerb;
  /** The task (`stop`, `rerun`). */
  task?: string;
  /** The engine (`unwait`: the engine whose quota wait is cleared). */
  engine?: string;
  /** What `record` puts on its task. */
  landed?: Landed;
  /** The sender's identity. */
  by: string;
  host: string;
  pid: number;
  at: number;
}

/** A line that is not a command the orchestrator can act on: acknowledged as refused with `reason`. */
export type BadControlLine = Pick<ControlAck, 'id' | 'verb' | 'task' | 'engine' | 'by' | 'host' | 'at' | 'reason'>;

/** The control file of the run whose records are in `runDir`. */
export function controlFile(runDir: string): string {
  return path.join(runDir, 'control.jsonl');
}

/**
 * Appends one command to the run's control file under the cross-process lock (so two senders never interleave a
 * line) and returns it with its fresh id.
 */
export async function appendControl(
  runDir: string,
  cmd: Omit<ControlCommand, 'id' | 'at' | 'pid'> & { id?: string; at?: number; pid?: number },
): Promise<ControlCommand> {
  const full: ControlCommand = {
    id: cmd.id ?? crypto.randomUUID(),
    verb: cmd.verb,
    ...(cmd.task !== undefined ? { task: cmd.task } : {}),
    ...(cmd.engine !== undefined ? { engine: cmd.engine } : {}),
    ...(cmd.landed !== undefined ? { landed: cmd.landed } : {}),
    by: cmd.by,
    host: cmd.host,
    pid: cmd.pid ?? process.pid,
    at: cmd.at ?? Date.now(),
  };
  const file = controlFile(runDir);
  await withLock(file, async () => {
    await fs.promises.appendFile(file, JSON.stringify(full) + '\n');
  });
  return full;
}

/** Parses one line: a command, or why it is refused. `offset` names a line without a usable id. */
export function parseControlLine(line: string, offset: number): ControlCommand | BadControlLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (e) {
    return { id: `line@${offset}`, verb: '?', task: null, by: '?', host: '?', at: 0, reason: `not JSON: ${(e as Error).message}` };
  }
  const o = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const id = str(o.id) ?? `line@${offset}`;
  const verb = str(o.verb) ?? '?';
  const task = str(o.task);
  const engine = str(o.engine);
  const by = str(o.by) ?? '?';
  const host = str(o.host) ?? '?';
  const at = typeof o.at === 'number' ? o.at : 0;
  const bad = (reason: string): BadControlLine => ({ id, verb, task, ...(engine !== null ? { engine } : {}), by, host, at, reason });
  if (!str(o.id)) return bad('no id');
  if (!KNOWN_VERBS.includes(verb)) return bad(`unknown verb "${verb}" (known: ${KNOWN_VERBS.join(', ')})`);
  if (TASK_VERBS.has(verb) && !task) return bad(`${verb} needs a task`);
  if (!TASK_VERBS.has(verb) && task) return bad(`${verb} acts on ${ENGINE_VERBS.has(verb) ? 'an engine' : 'the whole run'}; it takes no task`);
  if (ENGINE_VERBS.has(verb) && !engine) return bad(`${verb} needs an engine`);
  if (!ENGINE_VERBS.has(verb) && engine) return bad(`${verb} takes no engine`);
  let landed: Landed | undefined;
  if (verb === 'record') {
    landed = parseLanded(o.landed) ?? undefined;
    if (!landed) return bad('record needs landed: { merged: { commit, into, at } } or { discarded: { commit, at } }');
  } else if (o.landed !== undefined) return bad(`${verb} takes no landed`);
  return {
    id,
    verb: verb as ControlVerb,
    ...(task ? { task } : {}),
    ...(engine ? { engine } : {}),
    ...(landed ? { landed } : {}),
    by,
    host,
    pid: typeof o.pid === 'number' ? o.pid : 0,
    at,
  };
}

/** A `record` command's `landed`, checked field by field (the control file is written by other processes); null when malformed. */
function parseLanded(v: unknown): Landed | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const sha = (x: unknown): x is string => typeof x === 'string' && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(x);
  const rec = (x: unknown) => (x && typeof x === 'object' ? (x as Record<string, unknown>) : null);
  const m = rec(o.merged);
  const d = rec(o.discarded);
  const paths = m?.paths;
  const pathsOk = paths === undefined || (Array.isArray(paths) && paths.every((p) => typeof p === 'string' && p !== ''));
  if (m && !d && sha(m.commit) && typeof m.into === 'string' && m.into && typeof m.at === 'number' && pathsOk)
    return { merged: { commit: m.commit, into: m.into, at: m.at, ...(paths ? { paths: paths as string[] } : {}) } };
  if (d && !m && (d.commit === null || sha(d.commit)) && typeof d.at === 'number') return { discarded: { commit: d.commit as string | null, at: d.at } };
  return null;
}

/** True for a parsed line the orchestrator can act on. */
export function isCommand(x: ControlCommand | BadControlLine): x is ControlCommand {
  return !('reason' in x);
}

/**
 * Reads a control file from where it last stopped (a byte offset). Only whole lines are returned: a last line without
 * its newline (a sender mid-append, or a crash) is left for the next read. A missing file reads as empty.
 */
export class ControlReader {
  private offset = 0;

  constructor(readonly file: string) {}

  /** The lines appended since the last read, parsed, in order. */
  read(): (ControlCommand | BadControlLine)[] {
    let fd: number;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch {
      return [];
    }
    try {
      const size = fs.fstatSync(fd).size;
      if (size <= this.offset) return [];
      const buf = Buffer.alloc(size - this.offset);
      const n = fs.readSync(fd, buf, 0, buf.length, this.offset);
      const end = buf.subarray(0, n).lastIndexOf(0x0a);
      if (end < 0) return [];
      const out: (ControlCommand | BadControlLine)[] = [];
      let start = 0;
      while (start <= end) {
        const nl = buf.indexOf(0x0a, start);
        const line = buf.subarray(start, nl).toString('utf8').trim();
        if (line) out.push(parseControlLine(line, this.offset + start));
        start = nl + 1;
      }
      this.offset += end + 1;
      return out;
    } finally {
      fs.closeSync(fd);
    }
  }
}
