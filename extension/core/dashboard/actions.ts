import fs from 'node:fs';
import path from 'node:path';
import type { RunAction, TaskAction } from '../../../schemas/protocol';
import type { VerdictConfig } from '../config/config';
import { mergeQueue, mergeTarget } from '../git/merge';
import { landedReason } from '../run/landed';
import { recordLanding } from '../run/task-landing';
import type { RunInfo } from '../live/registry';
import { deliveredBefore, mergeRequestsForRun } from '../run/merge-plan';
import { launchDetached, sendControlAndWait, waitForRunStart } from '../run/run-launch';

/** How an action on a task ended, as the page is told (protocol `did-act`): one line in `message`. */
export interface ActionReply {
  result: 'done' | 'refused' | 'sent';
  message: string;
}

/**
 * What a dashboard host does when its page asks to act on one task of a run (`task-action`). The session has already
 * checked the run and the task exist. Resolves with the reply; a rejection is reported to the page as refused.
 */
export type DashboardActions = (action: TaskAction, info: RunInfo, key: string) => Promise<ActionReply>;

/**
 * What a dashboard host does when its page asks to pause, resume or drain a run (`run-action`). The session has already
 * checked the run exists. Resolves with the reply; a rejection is reported to the page as refused.
 */
export type DashboardRunActions = (action: RunAction, info: RunInfo) => Promise<ActionReply>;

/**
 * The run actions of a host that acts itself (`verdict hud`), as `verdict pause|resume|drain RUN`: on a live run each
 * is appended to the run's control channel and waited for (up to `ackWaitMs`, default 15 s) in state.json, `by` naming
 * the sender there; `resume` of a run that is not live starts `verdict resume RUN` detached (`cli`, the bundled CLI,
 * with `config` as its generated config file) and answers once the new orchestrator has taken the run over (it
 * reconciles a run whose orchestrator died first); `pause` and `drain` of a run that is not live are refused, as is
 * `resume` of one when no `cli` is given.
 */
export function localRunActions(home: string, by: string, opts: { ackWaitMs?: number; cli?: string; config?: VerdictConfig } = {}): DashboardRunActions {
  return async (action, info) => {
    const runId = info.state.runId;
    if (info.liveness !== 'running') {
      if (action !== 'resume' || !opts.cli)
        return { result: 'refused', message: `run ${runId} is not live (${info.liveness}); ${action} acts on a running run` };
      const file = info.state.manifestFile;
      const cwd = fs.existsSync(path.dirname(file)) ? path.dirname(file) : process.cwd();
      const run = launchDetached({ cli: opts.cli, manifest: file, resume: runId, home, cwd, config: opts.config ?? {}, identity: by });
      const taken = await waitForRunStart(home, run);
      return { result: 'done', message: `resume: run ${taken.state.runId} goes on under a new orchestrator (pid ${run.pid})` };
    }
    const { command, ack } = await sendControlAndWait(info.stateFile, { verb: action, by }, opts.ackWaitMs);
    if (!ack) return { result: 'sent', message: `${action}: sent (command ${command.id}), not acknowledged yet` };
    return { result: ack.result, message: `${action}: ${ack.result}${ack.reason ? ` — ${ack.reason}` : ''}` };
  };
}

/**
 * The actions of a host that acts itself (`verdict hud`), the way the CLI verbs do: `stop` and `rerun` of a live run
 * append to the run's control channel and wait (up to `ackWaitMs`, default 15 s) for the orchestrator's acknowledgment
 * in state.json (`by` names the sender there), exactly as `verdict stop|rerun`; `rerun` of a run that ended starts
 * `verdict rerun RUN TASK` detached (`cli`, the bundled CLI, with `config` as its generated config file: the same run
 * id goes on under a new orchestrator) and answers once that orchestrator has taken the run over; `merge` runs the merge queue for that one task as
 * `verdict merge RUN TASK` (rebase onto the repository's current branch, re-check in the sandbox, fast-forward), one
 * merge at a time however many pages ask; `open-diff` is refused (a browser reads the diff endpoint instead), and
 * `open-log` too (the page shows each worker's output live).
 */
export function localActions(home: string, by: string, opts: { ackWaitMs?: number; cli?: string; config?: VerdictConfig } = {}): DashboardActions {
  let merging: Promise<unknown> = Promise.resolve();
  return async (action, info, key) => {
    const runId = info.state.runId;
    switch (action) {
      case 'stop':
      case 'rerun': {
        if (info.liveness !== 'running' && action === 'rerun' && opts.cli) {
          const file = info.state.manifestFile;
          // From the manifest's folder, as the editor starts it; the run's frozen manifest is what runs, so a folder gone since is no reason to refuse.
          const cwd = fs.existsSync(path.dirname(file)) ? path.dirname(file) : process.cwd();
          const run = launchDetached({ cli: opts.cli, manifest: file, resume: runId, rerun: key, home, cwd, config: opts.config ?? {}, identity: by });
          const taken = await waitForRunStart(home, run);
          return { result: 'done', message: `rerun ${key}: run ${taken.state.runId} goes on under a new orchestrator (pid ${run.pid})` };
        }
        if (info.liveness !== 'running') return { result: 'refused', message: `run ${runId} is not live (${info.liveness}); ${action} acts on a running run` };
        const { command, ack } = await sendControlAndWait(info.stateFile, { verb: action, task: key, by }, opts.ackWaitMs);
        if (!ack) return { result: 'sent', message: `${action} ${key}: sent (command ${command.id}), not acknowledged yet` };
        return { result: ack.result, message: `${action} ${key}: ${ack.result}${ack.reason ? ` — ${ack.reason}` : ''}` };
      }
      case 'merge': {
        const run = async (): Promise<ActionReply> => {
          const requests = mergeRequestsForRun(home, info.state, [key]);
          const task = info.state.tasks.find((t) => t.key === key);
          const landed = task ? landedReason(task) : null;
          if (landed) return { result: 'refused', message: `${key}: ${landed}` };
          if (!requests.length)
            return { result: 'refused', message: `${key} is ${task?.status ?? 'unknown'}: only a task that passed has work on its branch to merge` };
          const into = await mergeTarget(requests[0]!.repo);
          const [o] = await mergeQueue(requests, undefined, { merged: deliveredBefore(home, info.state) });
          if (!o) return { result: 'refused', message: `${key}: nothing merged` };
          if (o.status === 'MERGED') {
            const why = await recordLanding(info.stateFile, key, { merged: { commit: o.sha, into, at: Date.now(), paths: o.paths } });
            return { result: 'done', message: `${key}: MERGED into ${into} (now ${o.sha.slice(0, 10)})${why ? `; ${why}` : ''}` };
          }
          return { result: 'refused', message: `${key}: ${o.status} — ${o.reason}` };
        };
        const done = merging.then(run, run);
        merging = done.catch(() => undefined);
        return done;
      }
      case 'open-diff':
        return { result: 'refused', message: 'this host shows the diff as text (its diff endpoint); it opens no editor' };
      case 'open-log':
        return { result: 'refused', message: "this page shows each worker's output live under it; this host opens no editor" };
    }
  };
}
