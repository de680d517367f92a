import { slotsInUse } from '../core/run/slots';
import fs from 'node:fs';
import path from 'node:path';
import { runDir } from '../core/config/home';
import { discardTaskWorktree } from '../core/git/discard';
import { DirtyTreeError, mergeQueue, mergeTarget, suiteStopLine, type MergeOutcome } from '../core/git/merge';
import { shortHost } from '../core/host/hostname';
import { resolveIdentity } from '../core/host/identity';
import { appendControl, type ControlVerb } from '../core/live/control';
import { describeRun, listRuns, readState, type RunInfo } from '../core/live/registry';
import type { EngineWait, RunState, TaskState } from '../core/live/state';
import { mergeRequestsForRun } from '../core/run/merge-plan';
import { landedLabel, landedReason, recordLanding } from '../core/run/task-landing';
import { waitLines, waitsLine } from '../core/run/quota-wait';
import { resultCounts, resultSummary, statusInfo, taskResult } from '../../schemas/status';
import { attemptLabel } from '../../schemas/attempt-label';
import { candidateLabel, groupedOrder, leadLines, memberLabel, oneLine, rowAfter, selectLines } from '../../schemas/task-order';
import { spendLine } from '../../schemas/spend';
import { printable } from './format';
import { InputError, type Io } from './io';
import { loadEngines } from './load-engines';

/**
 * The CLI side of a run's control channel (docs/runs.md "Controlling a live run") and the commands that act
 * on one run's tasks: stop, pause, drain, resume (live), rerun, merge, discard, and the runs listing.
 */

/** How long a control verb waits for its acknowledgment in state.json, ms (a cancel waits for the run to end). */
export const ACK_WAIT_MS = 15_000;

/**
 * The run a RUN argument names: its exact id, or a prefix of exactly one run id under `<home>/runs`.
 * @throws InputError when none or several match, or its state file is unreadable
 */
export function resolveRun(home: string, arg: string): RunInfo {
  let ids: string[];
  try {
    ids = fs.readdirSync(path.join(home, 'runs'));
  } catch {
    ids = [];
  }
  const matches = ids.includes(arg) ? [arg] : ids.filter((id) => id.startsWith(arg)).sort();
  if (!matches.length) throw new InputError(`no run ${arg} under ${home}`);
  if (matches.length > 1)
    throw new InputError(
      `"${arg}" is the start of ${matches.length} run ids (${matches.slice(0, 4).join(', ')}${matches.length > 4 ? ', …' : ''}); give more of it`,
    );
  const stateFile = path.join(runDir(home, matches[0] as string), 'state.json');
  const read = readState(stateFile);
  if (!('state' in read)) throw new InputError(`run ${matches[0]}: ${read.reason === 'missing' ? 'no state file' : read.reason}`);
  return describeRun(read.state, stateFile);
}

/** Options of a control verb. */
export interface ControlOptions {
  home: string;
  identity?: string;
  /** Return once the command is appended, without waiting for its acknowledgment. */
  noWait?: boolean;
  /** Test hook: how long to wait for the acknowledgment, ms (default ACK_WAIT_MS). */
  waitMs?: number;
  /** The engine the verb names (`unwait`). */
  engine?: string;
}

/**
 * Sends one command to a live run through its control file and (unless noWait) waits for its acknowledgment in
 * state.json, printing it. Returns 0 done (or sent, with noWait), 1 refused or not acknowledged in time.
 * @throws InputError when the run is unknown or not live
 */
export async function sendControl(info: RunInfo, verb: ControlVerb, task: string | undefined, opts: ControlOptions, io: Io): Promise<number> {
  const { state } = info;
  if (info.liveness !== 'running') {
    // A run that is not live keeps its waits for whoever resumes it: that orchestrator answers unwait.
    const hint = verb === 'unwait' ? ` (\`verdict resume ${state.runId}\` takes it over, honouring its waits; unwait it once it runs)` : '';
    throw new InputError(`run ${state.runId} is not live (${info.liveness}); ${verb} acts on a running run${hint}`);
  }
  if (task !== undefined && !state.tasks.some((t) => t.key === task))
    throw new InputError(`run ${state.runId} has no task ${task} (tasks: ${state.tasks.map((t) => t.key).join(', ')})`);
  const by = resolveIdentity({ flag: opts.identity, cwd: process.cwd(), configDefault: loadEngines(undefined).settings.identity }).identity;
  const cmd = await appendControl(path.dirname(info.stateFile), {
    verb,
    ...(task !== undefined ? { task } : {}),
    ...(opts.engine !== undefined ? { engine: opts.engine } : {}),
    by,
    host: shortHost(),
  });
  const what = `${verb}${task !== undefined ? ` ${task}` : ''}${opts.engine !== undefined ? ` ${opts.engine}` : ''}`;
  if (opts.noWait) {
    io.out(`sent ${what} to run ${state.runId} (command ${cmd.id}); its acknowledgment will be in ${info.stateFile} (control)`);
    return 0;
  }
  const deadline = Date.now() + (opts.waitMs ?? ACK_WAIT_MS);
  for (;;) {
    const read = readState(info.stateFile);
    if ('state' in read) {
      const a = read.state.control?.find((c) => c.id === cmd.id);
      if (a) {
        io.out(`${what}: ${a.result}${a.reason ? ` — ${a.reason}` : ''} (run ${state.runId}, acknowledged after ${a.ackAt - cmd.at} ms)`);
        return a.result === 'done' ? 0 : 1;
      }
      const now = describeRun(read.state, info.stateFile).liveness;
      if (now !== 'running') {
        io.err(`${what}: run ${state.runId} ended (${now}) without acknowledging command ${cmd.id}`);
        return 1;
      }
    }
    if (Date.now() > deadline) {
      io.err(
        `${what}: sent to run ${state.runId} (command ${cmd.id}) but not acknowledged within ${Math.round((opts.waitMs ?? ACK_WAIT_MS) / 1000)} s; see control in ${info.stateFile}`,
      );
      return 1;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `verdict stop RUN [TASK]`: stops one task of a live run, or (without TASK) cancels the run. */
export function stopCommand(run: string, task: string | undefined, opts: ControlOptions, io: Io): Promise<number> {
  return sendControl(resolveRun(opts.home, run), task === undefined ? 'cancel' : 'stop', task, opts, io);
}

/**
 * `verdict unwait RUN ENGINE`: clears ENGINE's quota wait in a live run (run/quota-wait.ts) through its control channel;
 * the engine's tasks start again at once. Returns as sendControl does (0 done, also when the engine was not waiting).
 * @throws InputError when the run is unknown or not live
 */
export function unwaitCommand(run: string, engine: string, opts: ControlOptions, io: Io): Promise<number> {
  return sendControl(resolveRun(opts.home, run), 'unwait', undefined, { ...opts, engine }, io);
}

/**
 * A wait as `verdict runs --json` shows it: until and the engine's reset (ISO 8601), the engine event's own words
 * (`reason`), which event (`source`), the task and attempt that set it, since when, why `until` is what it is, whether it
 * was shortened to the cap or confirmed by a probe, and the probe running now.
 */
function waitJson(w: EngineWait): Record<string, unknown> {
  const iso = (t: number) => new Date(t).toISOString();
  return {
    until: iso(w.until),
    reset: iso(w.reset ?? w.until),
    reason: w.reason,
    source: w.source ?? null,
    task: w.task,
    attempt: w.attempt,
    since: iso(w.since),
    why: w.why ?? null,
    capped: w.capped === true,
    confirmed: w.confirmed === true,
    probe: w.probe ? { task: w.probe.task, since: iso(w.probe.since) } : null,
  };
}

/** One line per run, live ones first (`verdict runs`). */
export function runsCommand(opts: { home: string; json: boolean }, io: Io): number {
  const { runs, skipped } = listRuns(opts.home);
  const rows = runs.map((r) => ({
    runId: r.state.runId,
    runName: r.state.runName,
    identity: r.state.identity,
    host: r.state.host,
    startedAt: new Date(r.state.startedAt).toISOString(),
    endedAt: r.state.endedAt === null ? null : new Date(r.state.endedAt).toISOString(),
    state: r.liveness,
    paused: r.state.paused === true,
    draining: r.state.draining === true,
    // Engines waiting for a quota reset (a resumed run honours them too), or whose probe runs: see waitJson.
    waits: Object.fromEntries(
      Object.entries(r.state.waits ?? {})
        .filter(([, w]) => w.until > Date.now() || (w.probe && r.liveness === 'running'))
        .map(([e, w]) => [e, waitJson(w)]),
    ),
    waiting: waitsLine(r.state),
    passed: r.counts.passed,
    total: r.counts.total,
    // Each task's result from the status table (schemas/status.ts): passed on a retry is passed, CANCELLED skipped.
    failed: resultCounts(r.state.tasks.map((t) => t.status)).failed,
    skipped: resultCounts(r.state.tasks.map((t) => t.status)).skipped,
  }));
  if (opts.json) {
    io.out(JSON.stringify(rows, null, 2));
    return 0;
  }
  for (const s of skipped) io.err(`skipped ${s.stateFile}: ${s.reason}`);
  if (!rows.length) {
    io.out(`no runs under ${opts.home}`);
    return 0;
  }
  const table = [['RUN', 'NAME', 'IDENTITY', 'STARTED', 'STATE', 'PASSED']];
  for (const r of rows) {
    const state = r.state + (r.paused ? ' (paused)' : '') + (r.draining ? ' (draining)' : '') + (r.waiting ? ` (${r.waiting})` : '');
    table.push([r.runId, r.runName, `${r.identity}@${r.host}`, localTime(new Date(r.startedAt)), state, `${r.passed}/${r.total}`]);
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) io.out(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
  // Machine-wide limits (engine max_parallel, manifest logins): the slots live runs hold now.
  const slots = slotsInUse(opts.home).filter((s) => s.limit > 0);
  if (slots.length)
    io.out(
      `slots on this machine: ${slots.map((s) => `${s.group.replace('-', ' ')} ${s.holders.length}/${s.limit}${s.holders.length ? ` (${s.holders.map((h) => `${h.runId} ${h.task}`).join(', ')})` : ''}`).join('; ')}`,
    );
  return 0;
}

/**
 * `verdict runs RUN`: one run's tasks in the graph's order (a task after its prerequisites), one line each: the task,
 * its status with the step its latest attempt is in or ended in (`running (check)`, `FAIL at check`), what it waits
 * for, its attempts, and why it ended as it did (a BLOCKED task names its prerequisite). A best-of-N task's candidates
 * follow it, indented, each with its number, `winner` and its score on a ranked task, and its engine; the task's line
 * says how it was decided (`select …`, the winner or why none passed, a tie, a disagreement). A validated, council or
 * phases task's lead (validator, chair, test phase) is followed by its members, indented, each with its role, number,
 * anonymous letter and engine; the lead's line says what it is over and, when BLOCKED, which members blocked it.
 * `--json`: the same rows, each with `engine` and `model`; the task with `select`, `winner`, `scores`, `tie`,
 * `disagreement`, each candidate with `group`, `candidate`, `won` and `score`; a lead with `role` and `blockedBy` (member
 * keys), each member with `lead`, `role`, `member`, `letter` (null when none) and `blocking`. Keys and reasons are printed as one line without control characters. Returns 0.
 * @throws InputError for an unknown run (see resolveRun)
 */
export function runTasksCommand(run: string, opts: { home: string; json: boolean }, io: Io): number {
  const info = resolveRun(opts.home, run);
  const s = info.state;
  const line = (t: TaskState, after: readonly string[], workflow: Record<string, unknown>, why: string | null) => {
    const last = t.attempts.at(-1);
    // The latest attempt's label while it runs or when it made the task's status; else the status (BLOCKED, CANCELLED…).
    // What was done with the work after the verdict (MERGED <commit>, DISCARDED <commit>) comes first.
    const label =
      landedLabel(t) ?? (last && (last.verdict === null || last.verdict === t.status) ? attemptLabel(last, info.liveness === 'orchestrator-died') : t.status);
    const reason = t.reason ?? (last && t.status !== 'PASS' ? last.notes : '');
    const memCap = [...new Set(t.attempts.map((a) => a.memCap).filter((m): m is string => m !== undefined))];
    return {
      key: t.key,
      status: t.status,
      result: taskResult(t.status),
      ...(t.merged ? { merged: t.merged } : {}),
      ...(t.discarded ? { discarded: t.discarded } : {}),
      label,
      step: last?.step ?? null,
      after,
      attempts: t.attempts.length,
      engine: t.engine,
      model: t.model,
      reason,
      ...(memCap.length ? { memCap } : {}),
      ...workflow,
      why: why ?? reason.split('\n')[0] ?? '',
    };
  };
  // A best-of-N task, then its candidates (indented in the table): the winner marked, a ranked task's scores shown. A
  // validated, council or phases task's lead, then its members: role, number, letter, and those that blocked it.
  const rows = groupedOrder(s.tasks, s.inputNames).flatMap((row) => {
    const t = row.task;
    if (row.role !== null) {
      const own = line(t, [], {}, null).why;
      return [
        {
          ...line(
            t,
            rowAfter(row).after ?? [],
            { role: row.role, blockedBy: row.blockedBy.map((m) => m.task.key) },
            [...leadLines(row), own].filter(Boolean).join('; '),
          ),
          indent: false,
        },
        ...row.members.map((m) => {
          const reason = line(m.task, [], {}, null).why;
          const place = { lead: t.key, role: m.role, member: m.number, letter: m.letter, blocking: m.blocking };
          return {
            ...line(
              m.task,
              [],
              place,
              [memberLabel(m), `${m.task.engine}${m.task.model ? `/${m.task.model}` : ''}`, m.task.status === 'PASS' ? '' : reason].filter(Boolean).join(' · '),
            ),
            indent: true,
          };
        }),
      ];
    }
    if (!row.candidates.length) return [{ ...line(t, t.after ?? [], {}, null), indent: false }];
    const decision = {
      select: t.select ?? 'first-pass',
      winner: t.winner ?? null,
      ...(t.scores ? { scores: t.scores } : {}),
      ...(t.tie ? { tie: t.tie } : {}),
      ...(t.disagreement ? { disagreement: t.disagreement } : {}),
      ...(t.consensus ? { consensus: t.consensus } : {}),
    };
    return [
      { ...line(t, rowAfter(row).after ?? [], decision, selectLines(t).join('; ')), indent: false },
      ...row.candidates.map((c) => {
        const reason = line(c.task, [], {}, null).why;
        return {
          ...line(
            c.task,
            [],
            { group: t.key, candidate: c.number, won: c.winner, score: c.score },
            [candidateLabel(c), `${c.task.engine}${c.task.model ? `/${c.task.model}` : ''}`, c.task.status === 'PASS' ? '' : reason]
              .filter(Boolean)
              .join(' · '),
          ),
          indent: true,
        };
      }),
    ];
  });
  if (opts.json) {
    io.out(
      JSON.stringify(
        {
          runId: s.runId,
          state: info.liveness,
          ...(s.spend ? { spend: s.spend } : {}),
          ...(s.containment ? { containment: s.containment } : {}),
          ...(s.forced ? { forced: true } : {}),
          waits: Object.fromEntries(Object.entries(s.waits ?? {}).map(([e, w]) => [e, waitJson(w)])),
          tasks: rows.map(({ label: _label, why: _why, indent: _indent, ...r }) => r),
        },
        null,
        2,
      ),
    );
    return 0;
  }
  io.out(
    `run ${s.runId} (${s.runName}) by ${s.identity}@${s.host}, started ${localTime(new Date(s.startedAt))}: ${info.liveness}${s.paused ? ' (paused)' : s.draining ? ' (draining)' : ''}${waitsLine(s) ? ` (${waitsLine(s)})` : ''}, ${resultSummary(s.tasks.map((t) => t.status))}`,
  );
  if (s.forced) io.out(`forced: ${forcedLine(s)}; its verdicts are worth what those checks prove (verdict lint ${s.manifestFile})`);
  // Who set each quota wait, from which engine event, why until then, and how to clear it (the engine's words as data).
  for (const line of waitLines(s)) io.out(`  ${printable(line)}`);
  const table = [['TASK', 'STATUS', 'AFTER', 'ATTEMPTS', 'WHY']];
  for (const r of rows)
    table.push([`${r.indent ? '  ' : ''}${oneLine(r.key)}`, r.label, r.after.map(oneLine).join(', ') || '—', String(r.attempts), printable(r.why)]);
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table)
    io.out(
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    );
  // Spent (settled and reported so far), reserved by running steps, and the budget, as the orchestrator last wrote them.
  const spend = spendLine(s.spend);
  if (spend) io.out(spend);
  // Under which memory containment the workers ran: each kind and limit, with the attempts that ran under it.
  const caps = new Map<string, string[]>();
  for (const t of s.tasks) for (const a of t.attempts) if (a.memCap) caps.set(a.memCap, [...(caps.get(a.memCap) ?? []), `${oneLine(t.key)}#${a.attempt}`]);
  if (caps.size) io.out(`memory: ${[...caps].map(([cap, who]) => `${cap} (${who.length > 6 ? `${who.length} attempts` : who.join(', ')})`).join('; ')}`);
  // What contained the steps, the network included (the line the run printed at its start), under the table.
  if (s.containment) io.out(`\n${printable(s.containment)}`);
  return 0;
}

/** How a forced run was forced: over lint errors with --force, and which of its resumes were (by whom, when). */
function forcedLine(s: RunState): string {
  const resumes = (s.resumes ?? []).filter((r) => r.forced).map((r) => `${r.verb} by ${r.by} at ${localTime(new Date(r.at))}`);
  return `run with --force over lint errors in its manifest${resumes.length ? ` (forced: ${resumes.join('; ')})` : ''}`;
}

function localTime(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/**
 * `verdict merge RUN [TASK...] [--batch]`: the merge queue (rebase, re-check, the suite on the result, fast-forward;
 * core/git/merge.ts mergeQueue, or mergeBatch with `batch`) for the named tasks, or every task that passed, into the
 * repository's current branch; one line per task, and a last line naming the merge that broke the suite and where the
 * branch was left (suiteStopLine). Returns 0 when every one merged, else 1.
 * @throws InputError for an unknown run or a run not in worktree mode
 */
export async function mergeCommand(run: string, keys: string[], opts: { home: string; batch?: boolean }, io: Io): Promise<number> {
  const info = resolveRun(opts.home, run);
  const { state } = info;
  if (!state.worktrees || !state.repo) throw new InputError(`run ${state.runId} is not a worktree-mode run; there are no task branches to merge`);
  let failed = false;
  for (const key of keys) {
    const t = state.tasks.find((x) => x.key === key);
    if (!t) throw new InputError(`run ${state.runId} has no task ${key} (tasks: ${state.tasks.map((x) => x.key).join(', ')})`);
    const landed = landedReason(t);
    if (landed) io.out(`${key}: ${landed}`);
    else if (t.status !== 'PASS') {
      io.out(`${key}: NOT MERGED — it is ${t.status}; only a task that passed has work on its branch to merge`);
      failed = true;
    }
  }
  // A best-of-N candidate is merged through its task (the winner), or when named.
  if (!keys.length) {
    for (const t of state.tasks.filter((x) => x.candidate === undefined)) {
      const landed = landedReason(t);
      if (landed) io.out(`${t.key}: ${landed}`);
      else if (t.status !== 'PASS') io.out(`${t.key}: not merged — ${t.status}`);
    }
  }
  let requests;
  try {
    requests = mergeRequestsForRun(opts.home, state, keys.length ? keys : undefined);
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  if (!requests.length) {
    if (!keys.length)
      io.out(
        `nothing to merge: no task of run ${state.runId} passed${state.tasks.some((t) => t.merged || t.discarded) ? ' and is neither merged nor discarded' : ''}`,
      );
    // Only tasks already merged or discarded were named: nothing to do, nothing wrong.
    return failed || !keys.length ? 1 : 0;
  }
  try {
    const into = await mergeTarget(state.repo);
    const outcomes = await mergeQueue(requests, (o) => io.out(mergeLine(o)), { batch: opts.batch === true });
    for (const o of outcomes) {
      if (o.status !== 'MERGED') continue;
      const why = await recordLanding(info.stateFile, o.key, { merged: { commit: o.sha, into, at: Date.now() } });
      if (why) io.err(`${o.key}: merged, but ${why}`);
    }
    const stop = suiteStopLine(outcomes, into);
    if (stop) io.out(stop);
    return failed || outcomes.some((o) => o.status !== 'MERGED') ? 1 : 0;
  } catch (e) {
    if (e instanceof DirtyTreeError) {
      io.err(e.message);
      return 1;
    }
    throw new InputError((e as Error).message);
  }
}

function mergeLine(o: MergeOutcome): string {
  if (o.status === 'MERGED') return `${o.key}: MERGED (now ${o.sha.slice(0, 10)})`;
  return `${o.key}: ${o.status} — ${o.reason}`;
}

/**
 * `verdict discard RUN TASK`: removes the task's worktree and deletes its branch (worktree mode), asking nothing.
 * Refused for a task a live run is still working on. Returns 0 discarded, 1 a live process works in the worktree.
 * @throws InputError for an unknown run or task, a plain-mode run, or a task still running
 */
export async function discardCommand(run: string, key: string, opts: { home: string }, io: Io): Promise<number> {
  const info = resolveRun(opts.home, run);
  const { state } = info;
  const task = state.tasks.find((t) => t.key === key);
  if (!task) throw new InputError(`run ${state.runId} has no task ${key} (tasks: ${state.tasks.map((t) => t.key).join(', ')})`);
  if (!state.worktrees || !state.repo || !task.branch)
    throw new InputError(`run ${state.runId} is a plain-mode run: ${key} has no worktree or branch (its folder is ${task.dir})`);
  if (info.liveness === 'running' && !statusInfo(task.status).final) {
    throw new InputError(`${key} of run ${state.runId} is ${task.status} in a live run; stop it first (verdict stop ${state.runId} ${key})`);
  }
  try {
    const r = await discardTaskWorktree(state.repo, task.dir, task.branch);
    const why = await recordLanding(info.stateFile, key, { discarded: { commit: r.sha ?? task.discarded?.commit ?? null, at: Date.now() } });
    if (why) io.err(`${key}: discarded, but ${why}`);
    io.out(
      `discarded ${key}: ${r.worktreeRemoved ? `worktree ${task.dir} removed` : 'no worktree left'}; ${r.branchDeleted ? `branch ${task.branch} deleted (it held ${r.sha}; recover with: git branch ${task.branch} ${r.sha})` : `branch ${task.branch} was already gone`}`,
    );
    return 0;
  } catch (e) {
    io.err(`${key}: ${(e as Error).message}`);
    return 1;
  }
}

/** The run a `verdict resume` names, when it is live (resume then unpauses it); null when it is not. */
export function liveRun(home: string, arg: string): RunInfo | null {
  const info = resolveRun(home, arg);
  return info.liveness === 'running' ? info : null;
}
