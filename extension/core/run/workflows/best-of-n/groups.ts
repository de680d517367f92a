/**
 * Deciding best-of-N groups in a running run (docs/workflows.md "Best-of-N", "Ranked"): a group's own entry waits,
 * like any `after` dependent, for its candidates; no worker runs for it. Each time one of its candidates may have
 * become final the task graph asks the workflow ({@link BestOfN.release}); the pure decision is gate.ts groupGate, and
 * {@link BestOfN.decide} acts on it: the group ends PASS with the winner's commit (in worktree mode its branch created
 * there, and a `select` eval row written), BLOCKED when none passed, or — `ranked` with two or more passing — its
 * ranking reviewers run first (ranking.ts) and decideRanking (rank.ts) picks the winner. Its dependents then go on as
 * after any task.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { evalLogPath, runDir } from '../../../config/home';
import { createBranchAt } from '../../../git/branch';
import { shortHost } from '../../../host/hostname';
import { appendEvalRow } from '../../../store/eval-log';
import type { ConsensusColumn, EvalRow, RankingColumn } from '../../../store/eval-row';
import type { RunState } from '../../../live/state';
import { recordFromView, type AttemptRecord } from '../../attempt-record';
import { statusInfo } from '../../../../../schemas/status';
import type { TaskRuntime } from '../../steps/context';
import type { WorkflowHost, WorkflowRelease, WorkflowRun } from '../workflow';
import { agreedReason, beatenReason, enoughReason, groupGate, type CandidateStatus, type GroupGate } from './gate';
import { decideConsensus, settledEarly, type Behaviour, type ConsensusMember } from './consensus';
import { runDistinguish, type InputsWriter, type PriorComparison, type ProbeCandidate } from './distinguish';
import { runInputsEngine } from './inputs-engine';
import { inputsFiles, inputsRow } from './inputs-record';
import { decideRanking, neutralNames, type RankOutcome } from './rank';
import { candidateMaterial, type CandidateSource } from './rank-material';
import { rankDir, rankerName, rankRow, type RankRecord, type RankRowContext } from './rank-record';
import { runRankers } from './ranking';
import { selectRow } from './select-row';
import { endTask } from '../../end-task';

/** One run's best-of-N groups being decided: the workflow's part of the run (workflow.ts WorkflowRun). */
export class BestOfN implements WorkflowRun {
  /** Branch creations, eval rows and rankings still under way; awaited before the run ends. */
  private readonly pending = new Set<Promise<void>>();
  /** Consensus groups compared before every candidate is final (stop_after), by group key (agreeEarly). */
  private readonly early = new Map<string, EarlyComparison>();

  constructor(private readonly host: WorkflowHost) {}

  /** A group waiting for its candidates: still waiting, or decided now (decide); undefined for any other task. */
  release(task: TaskRuntime): WorkflowRelease | undefined {
    if (!task.spec.select) return undefined;
    const gate = this.gate(task);
    if (gate.kind === 'enough') {
      const why = `stop_after ${task.spec.stopAfter} reached (${gate.passed.map((c) => c.key).join(', ')} passed)`;
      this.stopRest(task, gate.stop, enoughReason(task.spec.stopAfter as number, gate.passed), why);
      return 'wait';
    }
    if (gate.kind === 'wait') this.agreeEarly(task);
    return gate.kind === 'wait' ? 'wait' : () => this.decide(task, gate);
  }

  /**
   * `stop_after` candidates passed, or (consensus) enough agree: the group's candidates that are not final (`open`) are
   * stopped with `reason` (one not started never starts; a running attempt ends CANCELLED); the group's note says `why`;
   * the group is decided once they are final (release).
   */
  private stopRest(group: TaskRuntime, open: readonly CandidateStatus[], reason: string, why: string): void {
    const stopping = open
      .map((c) => this.task(c.key))
      .filter((t): t is TaskRuntime => t !== undefined && !statusInfo(t.state.status).final && !t.abort.signal.aborted);
    if (!stopping.length) return;
    this.host.run.emit({ type: 'task-note', key: group.spec.key, note: `${why}: ${stopping.map((t) => t.spec.key).join(', ')} cancelled` });
    // Each stop may settle its candidate at once (and ask release again): every one is taken before any is stopped.
    for (const t of stopping) if (!statusInfo(t.state.status).final && !t.abort.signal.aborted) this.host.graph.stop(t, reason);
  }

  /** Drain: a group with a candidate still running keeps waiting, so that candidate's PASS still decides it. */
  keepWaiting(task: TaskRuntime): boolean {
    const { byKey } = this.host.run;
    return (
      !!task.spec.select && task.spec.after.some((k) => byKey.get(k)?.state.status !== 'queued' && !statusInfo(byKey.get(k)?.state.status ?? 'queued').final)
    );
  }

  /** A group ranking its candidates when one of them is rerun: the ranking judged work that no longer stands. */
  waitsAgainFor(task: TaskRuntime, key: string): boolean {
    const again = !!task.spec.select && task.spec.after.includes(key);
    // What an early comparison found of the candidate judged work that no longer stands.
    if (again) this.early.delete(task.spec.key);
    return again;
  }

  /**
   * With stop_after on a consensus group whose inputs come from a command: once two or more candidates passed while
   * others are not final, the passing ones are compared already (the inputs made once, each candidate probed once, as
   * it passes; one comparison at a time per group), and once the largest group of alike behaviour can no longer be
   * outnumbered by the candidates not final (consensus.ts settledEarly) those are stopped as stop_after stops them.
   * The group's own comparison, once every candidate is final, reuses what was found (consensus). An early comparison
   * that cannot tell anything (no input, a tree that cannot be read) stops nothing; the final one says why.
   */
  private agreeEarly(group: TaskRuntime): void {
    const { spec } = group;
    if (spec.select !== 'consensus' || spec.stopAfter === undefined || typeof spec.distinguish?.inputs !== 'string') return;
    const state = this.early.get(spec.key) ?? { chain: Promise.resolve(), queued: false, prior: null, off: false, probes: 0 };
    this.early.set(spec.key, state);
    if (state.off || state.queued) return;
    const now = spec.after.map((k, i) => this.candidate(k, i + 1));
    if (now.filter((c) => c.status === 'PASS').length < 2 || now.every((c) => statusInfo(c.status).final)) return;
    state.queued = true;
    state.chain = state.chain
      .then(() => {
        state.queued = false;
        return this.probeEarly(group, state);
      })
      .catch((e: Error) => {
        state.off = true;
        this.host.run.ctx.emit({ type: 'task-note', key: spec.key, note: `consensus: the early comparison stopped: ${e.message}` });
      });
    this.track(state.chain);
  }

  /** One early comparison (agreeEarly): probes the passing candidates not probed yet, then stops the rest if enough agree. */
  private async probeEarly(group: TaskRuntime, state: EarlyComparison): Promise<void> {
    const { ctx } = this.host.run;
    const { spec } = group;
    const passed = spec.after.map((k, i) => this.candidate(k, i + 1)).filter((c) => c.status === 'PASS');
    if (state.off || group.abort.signal.aborted || spec.after.every((k) => statusInfo(this.candidate(k, 0).status).final)) return;
    const { probed, unreadable } = this.probeList(passed.filter((c) => !state.prior?.behaviours.has(c.key)));
    if (unreadable.length) return void (state.off = true);
    // Nothing new to probe (a candidate failed, which leaves fewer open): what was found is judged again.
    if (probed.length || !state.prior) {
      const records = path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', spec.key);
      const round = nextRound(records, 'consensus');
      const dir = path.join(records, `consensus-${round}-early-${++state.probes}`);
      const policy = spec.distinguish as NonNullable<typeof spec.distinguish>;
      const found = await runDistinguish(ctx, group, policy, probed, round, dir, state.prior ? { prior: state.prior } : {});
      if (found.undecidable !== null) return void (state.off = true);
      if (group.abort.signal.aborted) return;
      state.prior = { inputs: found.inputs, given: found.given, behaviours: new Map([...(state.prior?.behaviours ?? []), ...found.behaviours]) };
    }
    const { inputs, behaviours } = state.prior;
    // Candidates that passed meanwhile and are not compared yet count as open: they could join any group.
    const now = spec.after.map((k, i) => this.candidate(k, i + 1));
    const compared = new Map(now.flatMap((c) => (c.status === 'PASS' && behaviours.has(c.key) ? [[c.key, behaviours.get(c.key) as Behaviour[]]] : [])));
    const open = now.filter((c) => !statusInfo(c.status).final);
    const lead = settledEarly(compared, open.length + now.filter((c) => c.status === 'PASS' && !compared.has(c.key)).length);
    if (!lead) {
      // One that passed while this one ran is compared next.
      if (now.some((c) => c.status === 'PASS' && !compared.has(c.key))) this.agreeEarly(group);
      return;
    }
    const numbers = lead.lead.map((k) => (now.find((c) => c.key === k) as CandidateStatus).candidate);
    const why = agreedReason(numbers, inputs.length, lead.next, lead.open);
    this.stopRest(group, open, `cancelled: ${why}`, `consensus reached before stop_after ${spec.stopAfter}: ${why}`);
  }

  /** The passing candidates as probes see them (their sealed trees), and those whose sealed work cannot be read, said. */
  private probeList(passed: readonly CandidateStatus[]): { probed: ProbeCandidate[]; unreadable: string[] } {
    const probed: ProbeCandidate[] = [];
    const unreadable: string[] = [];
    for (const c of passed) {
      try {
        const source = this.sourceOf(c.key);
        probed.push({
          key: c.key,
          candidate: c.candidate,
          tree: source.mode === 'worktree' ? { mode: 'worktree', sha: source.seal.sha } : { mode: 'plain', dir: source.dir },
        });
      } catch (e) {
        unreadable.push(`candidate ${c.candidate}: ${(e as Error).message}`);
      }
    }
    return { probed, unreadable };
  }

  /** A group stopped: its candidates that are not final stop with it. */
  onStop(task: TaskRuntime, reason: string): void {
    if (!task.spec.select) return;
    for (const k of task.spec.after) {
      const c = this.host.run.byKey.get(k);
      if (c && !statusInfo(c.state.status).final) this.host.graph.stop(c, reason);
    }
  }

  /** A candidate: its group stands for it in the run's verdict (the others need not pass). */
  passNotNeeded(task: TaskRuntime): boolean {
    return task.spec.candidate !== undefined;
  }

  /** Null when no branch, row or ranking is under way; else a promise resolved once none is (started meanwhile too). */
  idle(): Promise<void> | null {
    return this.pending.size ? this.allDone() : null;
  }

  private async allDone(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  /** A task of this run, by key. */
  private task(key: string): TaskRuntime | undefined {
    return this.host.run.byKey.get(key);
  }

  /** The group's outcome so far, from its candidates' statuses (in this run, or the run it continues). */
  private gate(group: TaskRuntime): GroupGate {
    return groupGate(
      group.spec.select ?? 'first-pass',
      group.spec.after.map((k, i) => this.candidate(k, i + 1)),
      group.spec.stopAfter,
    );
  }

  /** Acts on a gate that is not `wait` (the group has left the graph's waiting tasks). */
  private decide(group: TaskRuntime, gate: Exclude<GroupGate, { kind: 'wait' | 'enough' }>): void {
    if (gate.kind === 'lost') return this.host.graph.block(group, gate.reason);
    if (gate.kind === 'won') {
      // A ranked group with a single passing candidate: it wins without a ranking (a consensus group, without a vote).
      const ranking =
        group.spec.select === 'ranked'
          ? { reason: 'the only candidate that passed: no ranking needed', column: { ranked: false, scores: {}, tie: null, disagreement: null } }
          : undefined;
      return this.win(
        group,
        gate.winner,
        ranking ?? (group.spec.select === 'consensus' ? { reason: 'the only candidate that passed: no consensus needed' } : undefined),
      );
    }
    if (gate.kind === 'consensus') {
      this.track(this.consensus(group, gate.passed).catch((e: Error) => this.fail(group, `its consensus failed: ${e.message}`)));
      return;
    }
    this.track(this.rank(group, gate.passed).catch((e: Error) => this.fail(group, `its ranking failed: ${e.message}`)));
  }

  /**
   * Compares the passing candidates (two or more; every candidate is final) by what `distinguish`'s probe does on each
   * one's sealed tree for each input (distinguish.ts), then decides by decideConsensus (consensus.ts): the winner, or,
   * groups tied and the task has `rank` reviewers, a ranking of one member per tied group. Stopped meanwhile, as rank.
   * @throws Error only when its records cannot be written (the caller ends the group ERROR)
   */
  private async consensus(group: TaskRuntime, passed: CandidateStatus[]): Promise<void> {
    const { ctx } = this.host.run;
    const { spec } = group;
    const records = path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', spec.key);
    const round = nextRound(records, 'consensus');
    const dir = path.join(records, `consensus-${round}`);
    Object.assign(group.state, {
      status: 'checking',
      reason: `comparing ${passed.length} passing candidates (${passed.map((c) => c.key).join(', ')}) on the inputs of distinguish`,
    });
    ctx.emit({ type: 'task-note', key: spec.key, note: group.state.reason as string });
    void ctx.stateFile.save();
    const members: ConsensusMember[] = passed.map((c) => this.member(c));
    const { probed, unreadable } = this.probeList(passed);
    // An early comparison (stop_after) under way ends first; what it found is reused (its inputs, its probes).
    const early = this.early.get(spec.key);
    if (early) await early.chain;
    this.early.delete(spec.key);
    const prior = early?.prior ?? undefined;
    const none = (why: string) => ({ inputs: [], given: 0, behaviours: new Map(), undecidable: why, notes: [] });
    let found: Awaited<ReturnType<typeof runDistinguish>>;
    if (unreadable.length) found = none(`the sealed work of ${unreadable.join('; ')} could not be read`);
    else {
      try {
        const policy = spec.distinguish as NonNullable<typeof spec.distinguish>;
        found = await runDistinguish(ctx, group, policy, probed, round, dir, {
          writer: this.inputsWriter(group, passed, round, dir),
          ...(prior ? { prior } : {}),
        });
      } catch (e) {
        // A tree that cannot be copied (git failed) says nothing of the candidates: consensus cannot decide, and says so.
        found = none(`the comparison could not run: ${(e as Error).message}`);
      }
    }
    fs.mkdirSync(dir, { recursive: true });
    if (group.abort.signal.aborted) return group.restart ? this.host.graph.waitForInputsAgain(group) : this.host.graph.cancel(group);
    for (const note of found.notes) ctx.emit({ type: 'task-note', key: spec.key, note: `consensus: ${note}` });
    const decision = decideConsensus(members, found.inputs, found.given, found.behaviours, found.undecidable, spec.rank !== undefined);
    fs.writeFileSync(path.join(dir, 'decision.json'), JSON.stringify(decision, null, 2));
    ctx.emit({ type: 'task-note', key: spec.key, note: `consensus: ${decision.column.why}` });
    if (decision.kind === 'rank') {
      const tied = passed.filter((c) => decision.tied.some((m) => m.key === c.key));
      return this.rank(group, tied, decision.column);
    }
    this.win(group, passed.find((c) => c.key === decision.winner) as CandidateStatus, { reason: decision.column.why, consensus: decision.column });
  }

  /**
   * The writer of a consensus round's inputs when they come from an engine (inputs-engine.ts), else undefined: the
   * passing candidates' work under neutral names as a ranking shows it, the engine's run, its `distinguish` eval row.
   */
  private inputsWriter(group: TaskRuntime, passed: readonly CandidateStatus[], round: number, dir: string): InputsWriter | undefined {
    const { ctx } = this.host.run;
    const { spec } = group;
    const policy = spec.distinguish;
    if (!policy || typeof policy.inputs === 'string') return undefined;
    const choice = policy.inputs;
    return async (root, notes) => {
      // A secret in the seed, as for a ranking: the names say nothing of the candidates' numbers.
      const named = neutralNames(
        passed.map((c) => c.candidate),
        `${ctx.runId}/${spec.key}/inputs/${crypto.randomBytes(16).toString('hex')}`,
      );
      const keyOf = (n: number) => (passed.find((c) => c.candidate === n) as CandidateStatus).key;
      const work = await Promise.all(
        named.map(async (n) => {
          const source = this.sourceOf(keyOf(n.candidate));
          return { name: n.name, source, material: await candidateMaterial(source, spec.checkTimeoutMs, [...ctx.opts.engines.keys()]) };
        }),
      );
      const redaction = {
        dirs: spec.after.map((k) => this.task(k)?.state.dir).filter((d): d is string => !!d),
        group: spec.key,
        engines: [...ctx.opts.engines.keys()],
      };
      ctx.emit({ type: 'task-note', key: spec.key, note: `consensus: ${rankerName({ engine: choice.engine, model: choice.model })} writes the inputs` });
      const { record, made } = await runInputsEngine(
        ctx,
        { group, choice, dir, root, probe: policy.probe, maxInputs: policy.maxInputs, work, redaction },
        notes,
      );
      const names = Object.fromEntries(named.map((n) => [n.name, n.candidate]));
      fs.writeFileSync(inputsFiles(dir).receipt, JSON.stringify({ round, names, record }, null, 2));
      this.writeRow(group, inputsRow(this.rowContext(group, round, dir, names), record), `inputs engine row of ${record.engine}`);
      return made;
    };
  }

  /** The facts of the run and the group a reader's row of one round repeats (rank-record.ts RankRowContext). */
  private rowContext(group: TaskRuntime, round: number, dir: string, names: Record<string, number>): RankRowContext {
    const { ctx } = this.host.run;
    const { spec } = group;
    return {
      runId: ctx.runId,
      runName: ctx.opts.manifest.runName,
      identity: ctx.opts.identity,
      host: shortHost(),
      taskKey: spec.key,
      spec: spec.spec,
      taskType: spec.taskType,
      branch: group.state.branch,
      sandbox: ctx.bwrap ? 'bwrap' : 'none',
      round,
      dir,
      names,
    };
  }

  /** A passing candidate as the consensus sees it: its engine and model, what its attempts cost, when it passed. */
  private member(c: CandidateStatus): ConsensusMember {
    const t = this.task(c.key);
    const records = t?.records ?? [];
    const known = records.length > 0 && records.every((r) => r.costMicroUsd !== null);
    const pass = records.filter((r) => r.verdict === 'PASS').at(-1);
    const view = t?.state.attempts.filter((a) => a.verdict === 'PASS').at(-1);
    return {
      key: c.key,
      candidate: c.candidate,
      engine: t?.state.engine ?? '',
      model: t?.state.model ?? null,
      costMicroUsd: known ? records.reduce((sum, r) => sum + (r.costMicroUsd as number), 0) : null,
      passedAt: pass?.endedAt ?? view?.endedAt ?? Number.MAX_SAFE_INTEGER,
    };
  }

  /** Ends the group ERROR (a record of its ranking could not be written): its candidates' branches keep their work. */
  private fail(group: TaskRuntime, reason: string): void {
    endTask(this.host.run.ctx, group, 'ERROR', reason, { recordError: true });
    this.host.graph.settled(group);
  }

  private candidate(key: string, n: number): CandidateStatus {
    return { key, candidate: n, status: this.task(key)?.state.status ?? this.host.run.prior.get(key)?.status ?? 'CANCELLED' };
  }

  private track(p: Promise<void>): void {
    const tracked: Promise<void> = p.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /**
   * Appends an eval row in the background (marked `forced` in a run forced over lint errors, as every row of it is); a
   * row that cannot be written is said and counted, never thrown.
   */
  private writeRow(group: TaskRuntime, row: EvalRow, what: string): void {
    const { ctx } = this.host.run;
    this.track(
      appendEvalRow(evalLogPath(ctx.opts.home), ctx.opts.forced ? { ...row, forced: true } : row)
        .then(() => ctx.spend.rowWritten())
        .catch((e: Error) => {
          const message = `the ${what} of ${group.spec.key} could not be written: ${e.message}`;
          ctx.recordErrors.push(message);
          ctx.emit({ type: 'task-note', key: group.spec.key, note: message });
        }),
    );
  }

  /**
   * The group passes with `winner`: state (PASS, the winner's commit, `winner`, the reason; for a ranked group
   * `scores`, `tie`, `disagreement`; for a consensus group `consensus`), the task branch at the winner's commit, the
   * `select` row; a `first-pass` group's other candidates are stopped.
   */
  private win(group: TaskRuntime, winner: CandidateStatus, ranking?: { reason: string; column?: RankingColumn; consensus?: ConsensusColumn }): void {
    const { ctx } = this.host.run;
    const w = this.task(winner.key);
    const commit = w?.state.commit ?? this.host.run.prior.get(winner.key)?.commit ?? null;
    const who = `winner: candidate ${winner.candidate} (${winner.key}${w ? `, ${w.state.engine}${w.state.model ? `/${w.state.model}` : ''}` : ''})`;
    const reason = ranking ? `${who}; ${ranking.reason}` : who;
    group.state.winner = winner.key;
    if (ranking?.column) Object.assign(group.state, { scores: ranking.column.scores, tie: ranking.column.tie, disagreement: ranking.column.disagreement });
    const consensus = ranking?.consensus;
    if (consensus)
      group.state.consensus = {
        groups: consensus.groups.map((g) => g.members.map((m) => m.key)),
        inputs: consensus.inputs,
        splitting: consensus.splitting.length,
        decided: consensus.decided,
      };
    endTask(ctx, group, 'PASS', reason, { commit, save: false });
    if (ctx.repo && commit && group.state.branch) {
      const branch = group.state.branch;
      this.track(
        createBranchAt(ctx.repo.root, branch, commit, `verdict: ${winner.key} won ${group.spec.key}`).catch((e: Error) => {
          const message = `the branch ${branch} of ${group.spec.key} could not be created at its winner's commit ${commit.slice(0, 10)} (${winner.key}'s branch holds it): ${e.message}`;
          ctx.recordErrors.push(message);
          ctx.emit({ type: 'task-note', key: group.spec.key, note: message });
        }),
      );
    }
    // The decision's own eval row (step select, credited to the winner's model): what the scoreboard's "won" reads. A
    // winner that passed under an earlier orchestrator (a resumed run) has its record rebuilt from state.json.
    const won = w?.records.filter((r) => r.verdict === 'PASS').at(-1) ?? (w ? passFromState(ctx.stateFile.state, w) : undefined);
    if (won)
      this.writeRow(group, selectRow(this.host.workRow, won, group.spec.key, reason, Date.now(), ranking?.column, consensus), `select row (${winner.key} won)`);
    if (group.spec.select === 'first-pass') {
      for (const k of group.spec.after) {
        const c = this.task(k);
        if (c && !statusInfo(c.state.status).final) this.host.graph.stop(c, beatenReason(winner));
      }
    }
    void ctx.stateFile.save();
    this.host.graph.settled(group);
  }

  /**
   * Ranks the passing candidates (two or more; every candidate is final): one round of the group's `rank` reviewers on
   * copies of their work under neutral names, one `rank` row per reviewer, then the winner by decideRanking. Stopped
   * meanwhile, the group ends CANCELLED (a resumed run ranks it again), or, stopped because a candidate is rerun,
   * waits for its candidates and ranks them again in a new round.
   * @throws Error only when its records cannot be written (the caller ends the group ERROR)
   */
  private async rank(group: TaskRuntime, passed: CandidateStatus[], consensus?: ConsensusColumn): Promise<void> {
    const { ctx } = this.host.run;
    const { spec } = group;
    const records = path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', spec.key);
    const round = nextRound(records, 'rank');
    const dir = rankDir(records, round);
    fs.mkdirSync(dir, { recursive: true });
    // A secret in the seed: a reviewer that learns the run id and the key still cannot derive which name is which.
    const nonce = crypto.randomBytes(16).toString('hex');
    const named = neutralNames(
      passed.map((c) => c.candidate),
      `${ctx.runId}/${spec.key}/${nonce}`,
    );
    const keyOf = (n: number) => (passed.find((c) => c.candidate === n) as CandidateStatus).key;
    const names = Object.fromEntries(named.map((n) => [n.name, n.candidate]));
    Object.assign(group.state, {
      status: 'checking',
      reason: `ranking ${passed.length} passing candidates (${passed.map((c) => c.key).join(', ')}) by ${spec.rank?.engines.length ?? 0} reviewer(s)`,
    });
    ctx.emit({ type: 'task-note', key: spec.key, note: group.state.reason as string });
    void ctx.stateFile.save();
    const rowCtx = this.rowContext(group, round, dir, names);
    let rankings: RankRecord[] = [];
    let outcomes: RankOutcome[];
    try {
      const work = await Promise.all(
        named.map(async (n) => {
          const source = this.sourceOf(keyOf(n.candidate));
          return { name: n.name, source, material: await candidateMaterial(source, spec.checkTimeoutMs, [...ctx.opts.engines.keys()]) };
        }),
      );
      const redaction = {
        dirs: spec.after.map((k) => this.task(k)?.state.dir).filter((d): d is string => !!d),
        group: spec.key,
        engines: [...ctx.opts.engines.keys()],
      };
      rankings = await runRankers(ctx, { group, round, dir, work, redaction }, (r) => {
        ctx.emit({
          type: 'task-note',
          key: spec.key,
          note: `ranking ${r.reviewer}/${spec.rank?.engines.length ?? 0} by ${rankerName(r)}: ${
            r.scores
              ? Object.entries(r.scores)
                  .map(([k, v]) => `${k} ${v}`)
                  .join(', ')
              : `${r.cancelled ? 'CANCELLED' : 'ERROR'} (${r.error})`
          }`,
        });
        this.writeRow(group, rankRow(rowCtx, r), `rank row of ${r.engine}`);
      });
      outcomes = rankings.filter((r) => !r.cancelled).map((r) => ({ who: rankerName(r), scores: r.scores, error: r.error }));
    } catch (e) {
      outcomes = [{ who: 'the ranking', scores: null, error: `the candidates' work could not be read: ${(e as Error).message}` }];
    }
    if (group.abort.signal.aborted) {
      fs.writeFileSync(path.join(dir, 'receipt.json'), JSON.stringify({ round, nonce, names, rankings, decision: null }, null, 2));
      // A candidate being ranked was rerun: this round judged work that no longer stands; the next one reads the new.
      return group.restart ? this.host.graph.waitForInputsAgain(group) : this.host.graph.cancel(group);
    }
    const decision = decideRanking(named, outcomes);
    fs.writeFileSync(path.join(dir, 'receipt.json'), JSON.stringify({ round, nonce, names, rankings, decision }, null, 2));
    const scores = Object.fromEntries(
      named.filter((n) => decision.means[n.name] !== undefined).map((n) => [keyOf(n.candidate), decision.means[n.name] as number]),
    );
    const winner = passed.find((c) => c.candidate === decision.winner) as CandidateStatus;
    // A consensus tie the ranking broke: both decisions are said.
    this.win(group, winner, {
      reason: consensus ? `${consensus.why}; ${decision.reason}` : decision.reason,
      column: { ranked: decision.kind === 'ranked', scores, tie: decision.tie, disagreement: decision.disagreement },
      ...(consensus ? { consensus } : {}),
    });
  }

  /**
   * Where a passing candidate's work is read: worktree mode, its sealed commit against the head it was built on (the
   * PASS record of this process, else the receipt its orchestrator wrote); plain mode, its task dir.
   * @throws Error when no seal of its PASS is on record
   */
  private sourceOf(key: string): CandidateSource {
    const { ctx } = this.host.run;
    const t = this.task(key);
    if (!t) throw new Error(`${key} is not part of this run`);
    if (!ctx.repo) return { mode: 'plain', dir: t.state.dir };
    const git = { dir: ctx.repo.root, adminDir: ctx.repo.commonDir, commonDir: ctx.repo.commonDir };
    const seal = t.records.filter((r) => r.verdict === 'PASS').at(-1)?.seal ?? receiptSeal(t);
    if (!seal) throw new Error(`no sealed commit of ${key}'s PASS is on record`);
    return { mode: 'worktree', git, seal };
  }
}

/** A consensus group's comparison begun before every candidate is final (BestOfN agreeEarly). */
interface EarlyComparison {
  /** The early comparisons, one after the other. */
  chain: Promise<void>;
  /** One is waiting behind the one under way. */
  queued: boolean;
  /** What they found so far: the inputs and the behaviours of the candidates probed; null before the first. */
  prior: PriorComparison | null;
  /** No early stop can be decided (no input, a tree that cannot be read): the final comparison says why. */
  off: boolean;
  /** How many ran (their records: `consensus-<round>-early-<n>/`). */
  probes: number;
}

/** The record of the task's last PASS as state.json keeps it (its commit the task's), or undefined. */
function passFromState(run: RunState, t: TaskRuntime): AttemptRecord | undefined {
  const view = t.state.attempts.filter((a) => a.verdict === 'PASS').at(-1);
  return view && view.endedAt !== null ? { ...recordFromView(run, t.state, view, t.spec.spec, t.engine.harness), commit: t.state.commit } : undefined;
}

/** The next round of a group's ranking (`kind` rank) or consensus: one more than the rounds whose folders are in its records. */
function nextRound(records: string, kind: 'rank' | 'consensus'): number {
  let last = 0;
  for (const name of fs.existsSync(records) ? fs.readdirSync(records) : []) {
    const m = new RegExp(`^${kind}-(\\d+)$`).exec(name);
    if (m) last = Math.max(last, Number(m[1]));
  }
  return last + 1;
}

/** The seal in the receipt of the task's last PASS attempt (written by its orchestrator), or null. */
function receiptSeal(t: TaskRuntime): { parent: string; sha: string; changed: boolean } | null {
  const pass = t.state.attempts.filter((a) => a.verdict === 'PASS').at(-1);
  if (!pass) return null;
  try {
    const seal = (JSON.parse(fs.readFileSync(path.join(pass.dir, 'receipt.json'), 'utf8')) as { seal?: { parent?: unknown; sha?: unknown; changed?: unknown } })
      .seal;
    return seal && typeof seal.parent === 'string' && typeof seal.sha === 'string'
      ? { parent: seal.parent, sha: seal.sha, changed: seal.changed !== false }
      : null;
  } catch {
    return null;
  }
}
