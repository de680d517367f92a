import * as vscode from 'vscode';
import type { ActionReply, DashboardActions, DashboardRunActions } from '../../core/dashboard/actions';
import type { MergeOutcome } from '../../core/git/merge';
import type { ControlAck } from '../../core/live/control';
import type { RunInfo } from '../../core/live/registry';

/** The reply when a command returned nothing: it refused and said why in a notification (commands.ts `refuse`). */
const SEE_NOTIFICATION: ActionReply = { result: 'refused', message: 'not done; the notification says why' };

/**
 * The dashboard webview's task buttons, done by the extension's own commands (so trust, confirmations and messages are
 * the runs tree's): stop → Stop Task, rerun → Rerun Task (a live run: the control channel; one that ended: a detached
 * `verdict rerun`), merge → Merge Task
 * (the merge queue), open-diff → Review Task (VS Code's diff editor), open-log → Follow Task Log (the live log).
 */
export const editorActions: DashboardActions = async (action, info, key) => {
  const ref = { runId: info.state.runId, key };
  switch (action) {
    case 'stop':
    case 'rerun': {
      // Rerun Task of a run that ended starts `verdict rerun` detached and returns the run it took over.
      const ack = await vscode.commands.executeCommand<ControlAck | RunInfo | undefined>(action === 'stop' ? 'verdict.stopTask' : 'verdict.rerunTask', ref);
      if (!ack) return SEE_NOTIFICATION;
      if ('state' in ack) return { result: 'done', message: `rerun ${key}: run ${ack.state.runId} goes on under a new orchestrator` };
      return { result: ack.result, message: `${action} ${key}: ${ack.result}${ack.reason ? ` — ${ack.reason}` : ''}` };
    }
    case 'merge': {
      const outcomes = await vscode.commands.executeCommand<MergeOutcome[] | undefined>('verdict.mergeTask', ref);
      const o = outcomes?.[0];
      if (!o) return SEE_NOTIFICATION;
      return o.status === 'MERGED'
        ? { result: 'done', message: `${key}: MERGED (now ${o.sha.slice(0, 10)})` }
        : { result: 'refused', message: `${key}: ${o.status} — ${o.reason}` };
    }
    case 'open-diff': {
      const files = await vscode.commands.executeCommand<number | undefined>('verdict.reviewTask', ref);
      return files === undefined ? SEE_NOTIFICATION : { result: 'done', message: `${key}: ${files} changed file${files === 1 ? '' : 's'} in the diff editor` };
    }
    case 'open-log': {
      const editor = await vscode.commands.executeCommand<vscode.TextEditor | undefined>('verdict.followTaskLog', ref);
      return editor ? { result: 'done', message: `${key}: its live log is open in the editor` } : SEE_NOTIFICATION;
    }
  }
};

/**
 * The dashboard webview's run buttons, done by the extension's own commands (the runs tree's Pause Run, Resume Run and
 * Drain Run, so their messages are the same): pause and drain of a live run and resume of a paused one through its
 * control channel; resume of a run that ended through a detached `verdict resume RUN`.
 */
export const editorRunActions: DashboardRunActions = async (action, info) => {
  const ref = { runId: info.state.runId };
  const command = action === 'pause' ? 'verdict.pauseRun' : action === 'drain' ? 'verdict.drainRun' : 'verdict.resumeRun';
  const ack = await vscode.commands.executeCommand<ControlAck | RunInfo | undefined>(command, ref);
  if (!ack) return SEE_NOTIFICATION;
  if ('state' in ack) return { result: 'done', message: `resume: run ${ack.state.runId} goes on under a new orchestrator` };
  return { result: ack.result, message: `${action}: ${ack.result}${ack.reason ? ` — ${ack.reason}` : ''}` };
};
