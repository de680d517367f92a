/**
 * The runs listing: `verdict runs` (one line per run) and `verdict runs RUN` (its tasks), and the RUN argument that
 * every command acting on one run reads (resolveRun). Kept apart from the control verbs, merge and discard
 * (control-command.ts) so that reading a run loads no git, process or manifest code: `verdict runs RUN` on a run of
 * 1,000 tasks is mostly Node's start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runDir } from '../core/config/home';
import { describeRun, listRuns, readState, type RunInfo } from '../core/live/registry';
import type { EngineWait, RunState, TaskState } from '../core/live/state';
import { landedLabel } from '../core/run/landed';
import { waitLines, waitsLine } from '../core/run/quota-wait';
import { slotsInUse } from '../core/run/slots';
import { resultCounts, resultSummary, taskResult } from '../../schemas/status';
import { attemptLabel } from '../../schemas/attempt-label';
import { candidateLabel, groupedOrder, leadLines, memberLabel, oneLine, rowAfter, selectLines } from '../../schemas/task-order';
import { spendLine } from '../../schemas/spend';
import { printable } from './format';
import { InputError, type Io } from './io';

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
