/**
 * The control channel of a live run (docs/runs.md "Controlling a live run"): commands read by byte offset
 * from runs/<id>/control.jsonl, each acknowledged in state.json once its effect happened (or refused, saying why).
 * One method per verb: cancel, pause, resume, drain, stop, rerun, unwait, record.
 */
import { statusInfo } from '../../../schemas/status';
import { ControlReader, controlFile, isCommand, type BadControlLine, type ControlCommand } from '../live/control';
import type { AttemptLoop } from './attempt-loop';
import type { LiveRun } from './live-run';
import { wakeTime } from './quota-wait';
import type { TaskGraph } from './task-graph';
import type { TaskRuntime } from './steps/context';
import type { RunWorkflows } from './workflows';

/** How often a live run reads its control file (runs/<id>/control.jsonl), ms. */
export const CONTROL_POLL_MS = 250;

type AnyLine = ControlCommand | BadControlLine;

/** Reads and carries out one run's control commands. */
export class ControlHandler {
  /** Acknowledgments given when the run ends (a cancel is done once every attempt is recorded). */
  private readonly atEnd: (() => void)[] = [];
  private ending = false;
  private readonly reader: ControlReader;
  /** What an earlier orchestrator of a continued run acknowledged is not done again (the file is read from its start). */
  private readonly acknowledged: Set<string>;
  private poller: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly run: LiveRun,
    private readonly graph: TaskGraph,
    private readonly loop: AttemptLoop,
    private readonly workflows: RunWorkflows,
  ) {
    this.reader = new ControlReader(controlFile(run.dir));
    this.acknowledged = new Set((run.state.control ?? []).map((a) => a.id));
  }

  /** Starts reading the control file every CONTROL_POLL_MS. */
  start(): void {
    this.poller = setInterval(() => this.poll(), CONTROL_POLL_MS);
  }

  /** The run is over: commands still unread are refused, and the acknowledgments kept for the end are given. */
  end(): void {
    if (this.poller) clearInterval(this.poller);
    this.ending = true;
    this.poll();
    for (const fn of this.atEnd) fn();
  }

  private poll(): void {
    for (const c of this.reader.read()) if (!this.acknowledged.has(c.id)) this.handle(c);
  }

  /** Carries out one command (or refuses it). */
  handle(c: AnyLine): void {
    if (!isCommand(c)) return this.ack(c, 'refused', c.reason);
    if (this.ending) return this.ack(c, 'refused', 'the run had already ended');
    const task = c.task ? this.run.tasks.find((t) => t.spec.key === c.task) : undefined;
    if (c.task && !task) return this.ack(c, 'refused', `run ${this.run.runId} has no task ${c.task}`);
    switch (c.verb) {
      case 'cancel':
        return this.cancel(c);
      case 'pause':
        return this.pause(c);
      case 'resume':
        return this.resume(c);
      case 'drain':
        return this.drain(c);
      case 'stop':
        return this.stop(c, task as TaskRuntime);
      case 'rerun':
        return this.rerun(c, task as TaskRuntime);
      case 'unwait':
        return this.unwait(c, c.engine as string);
      case 'record':
        return this.record(c, task as TaskRuntime);
    }
  }

  private ack(c: AnyLine, result: 'done' | 'refused', reason: string): void {
    const { state } = this.run;
    (state.control ??= []).push({
      id: c.id,
      verb: c.verb,
      task: c.task ?? null,
      ...(c.engine !== undefined ? { engine: c.engine } : {}),
      by: c.by,
      host: c.host,
      at: c.at,
      ackAt: Date.now(),
      result,
      reason,
    });
    this.run.emit({
      type: 'run-note',
      note: `control: ${c.verb}${c.task ? ` ${c.task}` : ''}${c.engine ? ` ${c.engine}` : ''} from ${c.by}@${c.host}: ${result}${reason ? ` (${reason})` : ''}`,
    });
    void this.run.stateFile.save();
  }

  /** Why nothing may start now (the run is being cancelled or drained), or null. */
  private refuseStart(): string | null {
    return this.run.cancelled ? 'the run is being cancelled' : this.run.state.draining ? 'the run is draining: nothing more starts' : null;
  }

  private cancel(c: ControlCommand): void {
    this.atEnd.push(() => this.ack(c, 'done', 'the run was cancelled: running attempts stopped and recorded CANCELLED, queued tasks never started'));
    if (!this.run.cancelled) this.graph.cancelRun();
  }

  private pause(c: ControlCommand): void {
    const why = this.refuseStart();
    if (why) return this.ack(c, 'refused', why);
    if (this.run.state.paused) return this.ack(c, 'done', 'already paused');
    this.run.state.paused = true;
    this.graph.scheduler.pause();
    this.ack(c, 'done', 'paused: no new attempt starts; running ones go on');
  }

  private resume(c: ControlCommand): void {
    if (!this.run.state.paused) return this.ack(c, 'done', 'not paused');
    this.run.state.paused = false;
    this.ack(c, 'done', 'resumed: attempts start again');
    this.graph.scheduler.resume();
  }

  private drain(c: ControlCommand): void {
    const { state, tasks } = this.run;
    if (this.run.cancelled) return this.ack(c, 'refused', 'the run is being cancelled');
    if (state.draining) return this.ack(c, 'done', 'already draining');
    state.draining = true;
    state.paused = false;
    const queued = tasks.filter((t) => t.state.status === 'queued' || t.state.status === 'retry_queued').length - this.graph.cancelWaiting(true);
    this.graph.scheduler.close();
    const running = tasks.filter((t) => !statusInfo(t.state.status).final).length;
    this.ack(c, 'done', `draining: ${queued} waiting task(s) CANCELLED (drained); ${running} running go on, then the run ends`);
  }

  private stop(c: ControlCommand, t: TaskRuntime): void {
    if (statusInfo(t.state.status).final) return this.ack(c, 'refused', `${t.spec.key} is already final (${t.state.status})`);
    this.graph.waitFinal(t, () => this.ack(c, 'done', `${t.spec.key} ended ${t.state.status}`));
    this.graph.stop(t, `stopped by ${c.by}`);
    // What a workflow stops with it (a best-of-N group's candidates).
    this.workflows.onStop(t, `stopped by ${c.by}`);
  }

  private rerun(c: ControlCommand, t: TaskRuntime): void {
    const why = this.refuseStart();
    if (why) return this.ack(c, 'refused', why);
    // A workflow's own refusal (a planner whose tasks joined the run, a best-of-N group).
    const refused = this.workflows.refuseRerun(t);
    if (refused) return this.ack(c, 'refused', refused);
    if (t.state.status === 'BLOCKED') {
      const gate = this.graph.gateOf(t);
      if (gate.kind === 'blocked')
        return this.ack(c, 'refused', `${t.spec.key} is BLOCKED by ${gate.by} (${gate.status}): rerun ${gate.by}, and ${t.spec.key} runs again once it passes`);
    }
    if (statusInfo(t.state.status).final) return this.rerunFinal(c, t);
    this.graph.waitFinal(t, () => this.rerunFinal(c, t));
  }

  /** A rerun of a task that is final (now, or once its running attempt ended). */
  private rerunFinal(c: ControlCommand, task: TaskRuntime): void {
    const why = this.refuseStart();
    if (why) return this.ack(c, 'refused', why);
    const reopened = this.graph.reopen(task);
    const { unblocked, restarted } = reopened;
    // Acknowledged first: queueing may start the attempt at once.
    this.ack(
      c,
      'done',
      `${task.spec.key} is queued again: attempt ${task.state.attempts.length + 1} next, with ${task.spec.maxAttempts} attempt(s)${unblocked.length ? `; then ${unblocked.map((t) => t.spec.key).join(', ')}` : ''}${restarted.length ? `; ${restarted.map((t) => t.spec.key).join(', ')} (reading it) stopped, to run again after it` : ''}`,
    );
    this.graph.requeue(task, reopened);
  }

  /** What the merge queue or discard did with a task's work, put on the task (state.json `merged` / `discarded`). */
  private record(c: ControlCommand, t: TaskRuntime): void {
    const landed = c.landed;
    if (!landed) return this.ack(c, 'refused', 'record needs landed');
    if ('merged' in landed && t.state.status !== 'PASS') return this.ack(c, 'refused', `${t.spec.key} is ${t.state.status}: only a task that passed is merged`);
    Object.assign(t.state, landed);
    this.ack(
      c,
      'done',
      'merged' in landed && landed.merged
        ? `${t.spec.key} merged into ${landed.merged.into} at ${landed.merged.commit.slice(0, 10)}`
        : `${t.spec.key} discarded`,
    );
  }

  private unwait(c: ControlCommand, engine: string): void {
    const { opts, runId, waits } = this.run;
    if (!opts.engines.has(engine)) return this.ack(c, 'refused', `run ${runId} has no engine ${engine} (engines: ${[...opts.engines.keys()].join(', ')})`);
    const cleared = waits.clear(engine);
    if (!cleared) return this.ack(c, 'done', `${engine} was not waiting`);
    // Every task on the engine that has not ended and runs no attempt was held by the wait, whether its job was
    // already parked on it or still queued behind it (a count of parked jobs alone depended on the timing).
    const woken = this.loop.heldBy(engine);
    // Acknowledged first: waking may start an attempt at once.
    this.ack(
      c,
      'done',
      `${engine} no longer waits (it waited until ${wakeTime(cleared.until)}, set by ${cleared.task} attempt ${cleared.attempt}${cleared.source ? ` from ${cleared.source}` : ''}); ${woken} task(s) on it go on`,
    );
    this.loop.wake(engine);
  }
}
