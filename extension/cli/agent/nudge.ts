import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { listRuns } from '../../core/live/registry';

/**
 * The two hooks `verdict install-agent` registers with Claude Code (`verdict agent-hook pre-bash|post-edit`, fed the
 * hook's JSON on stdin). Each may add one line of context to the agent, at most once per session, and never blocks:
 * whatever happens (bad JSON, an unwritable home) the hook prints nothing and exits 0.
 *
 * - pre-bash (PreToolUse, matcher Bash): a shell command that calls a model provider's API or runs a harness-like
 *   script (probe, smoke, eval, grader, simulation, persona, harness) while no Verdict run is live.
 * - post-edit (PostToolUse, matcher Edit|MultiEdit|Write): the session's edits reach {@link EDIT_LOOP_EDITS} across at
 *   least {@link EDIT_LOOP_FILES} files while no Verdict run is live.
 *
 * Payload shape (Claude Code hooks reference, "PreToolUse input" / "PostToolUse input"): `session_id`,
 * `hook_event_name`, `tool_name`, `tool_input` (`command` for Bash, `file_path` for Edit/Write), `cwd`, ... The answer
 * is `{"hookSpecificOutput": {"hookEventName", "additionalContext"}}` on stdout, which Claude Code adds to the
 * model's context. The rule set follows Ringer's hooks/ringer_nudge.py.
 */

export type HookMode = 'pre-bash' | 'post-edit';
export const HOOK_MODES: readonly HookMode[] = ['pre-bash', 'post-edit'];

/** Edits in one session before the edit-loop nudge, and the distinct files they must span. */
export const EDIT_LOOP_EDITS = 8;
export const EDIT_LOOP_FILES = 3;

/** The line added to the agent's context. */
export const NUDGE_TEXT =
  'Verdict: this looks like work a swarm should do (a model call, a harness script or an edit loop, with no Verdict run live). ' +
  'Load the verdict skill and write it as a manifest with a check that can fail (one task is a one-task manifest). ' +
  'If the user asked for this inline, go on.';

const PROVIDER =
  /(api\.anthropic\.com|api\.openai\.com|openrouter\.ai|generativelanguage\.googleapis\.com|api\.x\.ai|api\.mistral\.ai|\/v1\/chat\/completions|\/v1\/messages|\/v1\/responses)/i;
const HARNESS = /\b(?:node|python3?|bun|deno|tsx|npx\s+tsx)\s+\S*(?:probe|smoke|harness|eval|grader|simulat|persona)\S*\.(?:mjs|cjs|js|ts|py)\b/i;
const VERDICT = /(^|[\s/'"])verdict(\s|$)|dist\/cli\.js/;

/** True for a shell command the pre-bash hook nudges about (before the live-run and once-per-session tests). */
export function nudgeWorthyCommand(command: string): boolean {
  if (VERDICT.test(command)) return false;
  return PROVIDER.test(command) || HARNESS.test(command);
}

/** True when some run under `home` is live (its orchestrator heartbeats). */
function anyLiveRun(home: string): boolean {
  return listRuns(home).runs.some((r) => r.liveness === 'running');
}

function stateDir(home: string): string {
  return path.join(home, 'agent', 'sessions');
}

/** A session id as a file name: its SHA-256 (a hostile id cannot name a path). */
function sessionKey(id: unknown): string {
  return crypto
    .createHash('sha256')
    .update(String(id ?? 'no-session'))
    .digest('hex')
    .slice(0, 32);
}

/** Claims the session's one nudge for `mode`: true the first time, false ever after (an exclusive create). */
function claimOnce(home: string, session: unknown, mode: HookMode): boolean {
  fs.mkdirSync(stateDir(home), { recursive: true });
  try {
    fs.writeFileSync(path.join(stateDir(home), `${sessionKey(session)}.${mode}.nudged`), new Date().toISOString() + '\n', { flag: 'wx' });
    return true;
  } catch {
    return false;
  }
}

/** Counts one edit of the session; returns the edits and distinct files so far. */
function countEdit(home: string, session: unknown, file: unknown): { edits: number; files: number } {
  fs.mkdirSync(stateDir(home), { recursive: true });
  const f = path.join(stateDir(home), `${sessionKey(session)}.edits.json`);
  let state: { edits: number; files: string[] } = { edits: 0, files: [] };
  try {
    const read = JSON.parse(fs.readFileSync(f, 'utf8')) as { edits?: unknown; files?: unknown };
    if (typeof read.edits === 'number' && Array.isArray(read.files)) state = { edits: read.edits, files: read.files.map(String) };
  } catch {
    // first edit, or a torn file: start again
  }
  state.edits++;
  if (typeof file === 'string' && file && !state.files.includes(file)) state.files.push(file);
  const tmp = `${f}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state));
  fs.renameSync(tmp, f);
  return { edits: state.edits, files: state.files.length };
}

/**
 * The hook's answer to one payload: the JSON text to print, or null for nothing. Never throws (any error: null).
 * @param payloadText the hook's stdin
 * @param home VERDICT_HOME, where live runs are found and the per-session state is kept (`agent/sessions/`)
 * @param env the hook's environment: VERDICT_RUN_ID set (a run's worker or reviewer) means no nudge
 */
export function hookAnswer(mode: HookMode, payloadText: string, home: string, env: NodeJS.ProcessEnv = process.env): string | null {
  // A worker or reviewer of a Verdict run (its engine may be Claude Code reading these same user settings) is in a
  // live run by definition, even where the sandbox hides VERDICT_HOME from it: never nudged.
  if (env.VERDICT_RUN_ID) return null;
  try {
    const payload = JSON.parse(payloadText) as { session_id?: unknown; tool_input?: { command?: unknown; file_path?: unknown } };
    if (!payload || typeof payload !== 'object') return null;
    const input = payload.tool_input && typeof payload.tool_input === 'object' ? payload.tool_input : {};
    if (mode === 'pre-bash') {
      if (typeof input.command !== 'string' || !nudgeWorthyCommand(input.command)) return null;
      if (anyLiveRun(home) || !claimOnce(home, payload.session_id, mode)) return null;
      return JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', additionalContext: NUDGE_TEXT } });
    }
    const { edits, files } = countEdit(home, payload.session_id, input.file_path);
    if (edits < EDIT_LOOP_EDITS || files < EDIT_LOOP_FILES) return null;
    if (anyLiveRun(home) || !claimOnce(home, payload.session_id, mode)) return null;
    return JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: NUDGE_TEXT } });
  } catch {
    return null;
  }
}

/** Reads all of stdin (empty when it is a terminal or closed). */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `verdict agent-hook MODE`: prints the nudge or nothing; always exit 0 (an unknown mode too: a hook never blocks). */
export async function agentHookCommand(mode: string, home: string, out: (line: string) => void): Promise<number> {
  if (!(HOOK_MODES as readonly string[]).includes(mode)) return 0;
  let text = '';
  try {
    text = await readStdin();
  } catch {
    return 0;
  }
  const answer = hookAnswer(mode as HookMode, text, home);
  if (answer) out(answer);
  return 0;
}
