import fs from 'node:fs';
import path from 'node:path';
import { shortHost } from '../host/hostname';
import { HEARTBEAT_MS, type RunState, type TaskState } from './state';
import type { RunLiveness } from '../../../schemas/run-state';
import { statusInfo, type StatusBucket } from '../../../schemas/status';

/** How a run looks from outside its orchestrator (declared in schemas/run-state.ts, for the dashboard too). */
export type { RunLiveness };

/** One run as listed for views: its state plus liveness and counts. Times epoch ms. */
export interface RunInfo {
  state: RunState;
  liveness: RunLiveness;
  /** Absolute path of its state.json. */
  stateFile: string;
  counts: { total: number; queued: number; active: number; passed: number; failed: number; other: number };
  /** Sum of tokens in + out over every attempt with known usage. */
  tokens: number;
  /** Sum of known costs, micro-USD; null when no attempt reported a cost. */
  costMicroUsd: number | null;
}

/** A state file that could not be read, with why; the other runs still list. */
export interface SkippedRun {
  stateFile: string;
  reason: string;
}

/** A heartbeat older than this is stale, ms (three missed beats). */
export const STALE_HEARTBEAT_MS = 3 * HEARTBEAT_MS;

/**
 * Every run under `<home>/runs`, newest first, live ones before the rest. A half-written or corrupt state.json is
 * skipped and reported in `skipped`, never thrown. A run still marked running whose orchestrator pid is gone (this
 * host) or whose heartbeat is stale (another host) is "orchestrator-died".
 */
export function listRuns(home: string, now = Date.now()): { runs: RunInfo[]; skipped: SkippedRun[] } {
  const dir = path.join(home, 'runs');
  let ids: string[];
  try {
    ids = fs.readdirSync(dir);
  } catch {
    return { runs: [], skipped: [] };
  }
  const runs: RunInfo[] = [];
  const skipped: SkippedRun[] = [];
  for (const id of ids) {
    const stateFile = path.join(dir, id, 'state.json');
    const read = readState(stateFile);
    if ('reason' in read) {
      if (read.reason !== 'missing') skipped.push({ stateFile, reason: read.reason });
      continue;
    }
    runs.push(describeRun(read.state, stateFile, now));
  }
  const rank = (r: RunInfo) => (r.liveness === 'running' ? 0 : r.liveness === 'orchestrator-died' ? 1 : 2);
  runs.sort((a, b) => rank(a) - rank(b) || b.state.startedAt - a.state.startedAt);
  return { runs, skipped };
}

/** Reads one state.json: the state, or why it could not be used ('missing' when there is none yet). */
export function readState(stateFile: string): { state: RunState } | { reason: string } {
  let text: string;
  try {
    text = fs.readFileSync(stateFile, 'utf8');
  } catch (e) {
    return { reason: (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : (e as Error).message };
  }
  try {
    const state = JSON.parse(text) as RunState;
    if (state?.version !== 1 || typeof state.runId !== 'string' || !Array.isArray(state.tasks)) return { reason: 'not a Verdict state file (version 1)' };
    return { state };
  } catch (e) {
    return { reason: `corrupt or half-written JSON: ${(e as Error).message}` };
  }
}

/** Liveness and counts of one run. */
export function describeRun(state: RunState, stateFile: string, now = Date.now()): RunInfo {
  const counts = { total: state.tasks.length, queued: 0, active: 0, passed: 0, failed: 0, other: 0 };
  let tokens = 0;
  let cost: number | null = null;
  for (const t of state.tasks) {
    counts[bucket(t)]++;
    for (const a of t.attempts) {
      if (a.tokensIn !== null && a.tokensOut !== null) tokens += a.tokensIn + a.tokensOut;
      if (a.costMicroUsd !== null) cost = (cost ?? 0) + a.costMicroUsd;
    }
  }
  return { state, liveness: liveness(state, now), stateFile, counts, tokens, costMicroUsd: cost };
}

function bucket(t: TaskState): StatusBucket {
  return statusInfo(t.status).bucket;
}

/**
 * On this host the orchestrator's pid decides at once (gone → died); a run from another host sharing this
 * VERDICT_HOME can only be judged by its heartbeat (stale → died).
 */
function liveness(state: RunState, now: number): RunLiveness {
  if (state.status !== 'running') return state.status;
  if (state.host === shortHost()) return pidAlive(state.pid) ? 'running' : 'orchestrator-died';
  return now - state.heartbeatAt > STALE_HEARTBEAT_MS ? 'orchestrator-died' : 'running';
}

/** True when a process with this pid exists on this machine. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
