import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { discardTaskWorktree } from '../core/git/discard';
import { resolveHome } from '../core/config/home';
import { mergeQueue, mergeTarget, type MergeOutcome } from '../core/git/merge';
import { landedReason } from '../core/run/landed';
import { recordLanding } from '../core/run/task-landing';
import { attemptNotice, mergeNotice, notificationLine } from '../core/run/notices';
import type { ControlAck, ControlVerb } from '../core/live/control';
import type { Finding } from '../core/manifest/findings';
import { startGate } from '../core/manifest/lint';
import type { RunInfo } from '../core/live/registry';
import type { TaskState } from '../core/live/state';
import { sendControlAndWait } from '../core/run/run-launch';
import { deliveredBefore, mergeRequestsForRun } from '../core/run/merge-plan';
import type { RunSummary } from '../core/run/runner';
import { changedFiles } from './changed-files';
import type { ManifestDiagnostics } from './diagnostics';
import { isManifestDocument } from './diagnostics';
import { editorIdentity, requireTrust, type RunLauncher } from './launcher';
import { diffArguments, type LogKind, type RunsTreeProvider, type TaskRef } from './runs-tree';
import { runDoctor } from './doctor';
import { newManifest, type NewManifestArgs } from './new-manifest';
import { treatAsManifest } from './manifest-files';
import { readSettings } from './settings';
import { runForecast } from './forecast';
import type { TaskLogProvider } from './task-log';

/** What the commands share. */
export interface CommandContext {
  log: vscode.LogOutputChannel;
  diagnostics: ManifestDiagnostics;
  tree: RunsTreeProvider;
  launcher: RunLauncher;
  /** Live task logs (Follow Task Log). */
  taskLogs: TaskLogProvider;
}

/** A run as commands receive it: a tree node or `{ runId }`. */
interface RunRef {
  runId: string;
}

/** The output channel "Show Log" opens (set by registerCommands). */
let logChannel: vscode.LogOutputChannel | undefined;

/**
 * Shows an error (as one line: notificationLine) with a "Show Log" action that opens Output → Verdict, and returns
 * undefined, so a command that cannot proceed says why.
 */
function refuse<T>(message: string): T | undefined {
  void vscode.window.showErrorMessage(`Verdict: ${notificationLine(message)}`, 'Show Log').then((pick) => {
    if (pick === 'Show Log') logChannel?.show(true);
  });
  return undefined;
}

/** Runs `fn`, turning a thrown error (untrusted workspace, bad manifest, dirty tree…) into a message. */
async function guarded<T>(ctx: CommandContext, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (e) {
    ctx.log.error((e as Error).message);
    return refuse((e as Error).message || String(e));
  }
}

async function pickManifest(): Promise<vscode.Uri | undefined> {
  const active = vscode.window.activeTextEditor?.document;
  if (active && isManifestDocument(active)) return active.uri;
  const found = await vscode.workspace.findFiles('**/*.swarm.{json,jsonc}', '**/node_modules/**', 200);
  if (found.length === 1) return found[0];
  const pick = await vscode.window.showQuickPick(
    found.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })),
    { placeHolder: 'Manifest' },
  );
  return pick?.uri;
}

function taskOf(ctx: CommandContext, ref: TaskRef | undefined) {
  if (!ref?.runId || !ref.key) return undefined;
  ctx.tree.refresh();
  return ctx.tree.find(ref);
}

/** Options of Run Manifest for callers other than the palette (tests, other extensions). */
interface RunManifestOptions {
  /** The answer to the forecast's confirmation, given instead of asking (`Run` starts it, `Cancel` does not). */
  answer?: 'Run' | 'Cancel';
}

/**
 * Run Manifest: lint first (errors stop it: core/manifest/lint.ts startGate, as for the CLI), then the forecast
 * (forecast.ts runForecast, `verdict plan`'s core): its total is logged and shown, and when its p90 is above
 * `verdict.confirmAboveUsd` a modal asks before anything starts; then a cancellable progress notification.
 */
async function runManifestCommand(ctx: CommandContext, target?: unknown, options: RunManifestOptions = {}): Promise<RunSummary | undefined> {
  return guarded(ctx, async () => {
    requireTrust('run a manifest');
    const uri = target instanceof vscode.Uri ? target : await pickManifest();
    if (!uri) return undefined;
    const doc = await vscode.workspace.openTextDocument(uri);
    if (doc.isDirty) await doc.save();
    const gate = startGate(await ctx.diagnostics.lintNow(doc), false);
    if (gate.refused) {
      void vscode.commands.executeCommand('workbench.actions.view.problems');
      return refuse(`${vscode.workspace.asRelativePath(uri)} has ${gate.errors.length} error(s); see the Problems panel`);
    }
    // The forecast never stops a run by failing: a manifest the lint passed but the forecast cannot read runs unasked.
    const plan = await runForecast(uri.fsPath, ctx.log).catch((e: unknown) => {
      ctx.log.warn(`forecast of ${uri.fsPath}: ${(e as Error).message}`);
      return null;
    });
    const name = vscode.workspace.asRelativePath(uri);
    if (plan) ctx.log.info(`${name}: ${plan.line}${plan.reason ? ` — ${plan.reason}: asking before the run` : ''}`);
    if (plan?.confirm) {
      const ask = `Run ${name}? ${plan.line[0]?.toUpperCase()}${plan.line.slice(1)}; ${plan.reason ?? ''}.`;
      const answer = options.answer ?? (await vscode.window.showWarningMessage(ask, { modal: true }, 'Run'));
      if (answer !== 'Run') {
        ctx.log.info(`${name}: not run (the forecast was not confirmed)`);
        return undefined;
      }
    }
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Verdict: ${name}`, cancellable: true },
      async (progress, token) => {
        if (plan) progress.report({ message: plan.line });
        const summary = await ctx.launcher.run(uri.fsPath, {
          token,
          onEvent: (e) => {
            if (e.type === 'attempt-finished') progress.report({ message: attemptNotice(e) });
          },
        });
        const passed = summary.tasks.filter((t) => t.verdict === 'PASS').length;
        void finishNotice(ctx, summary, passed);
        return summary;
      },
    );
  });
}

/**
 * The notice at a run's end, with its next steps: Review (the run in the runs view), Merge All Passed (when a task
 * passed with committed work in worktree mode) and Open Dashboard.
 */
async function finishNotice(ctx: CommandContext, summary: RunSummary, passed: number): Promise<void> {
  const mergeable = summary.state.worktrees && summary.state.tasks.some((t) => t.status === 'PASS' && t.commit);
  const actions = ['Review', ...(mergeable ? ['Merge All Passed'] : []), 'Open Dashboard'];
  const text = `Verdict: ${passed}/${summary.tasks.length} passed (run ${summary.runId})`;
  const pick =
    passed === summary.tasks.length ? await vscode.window.showInformationMessage(text, ...actions) : await vscode.window.showWarningMessage(text, ...actions);
  if (pick === 'Review') {
    ctx.tree.refresh();
    await vscode.commands.executeCommand('verdict.runs.focus');
  } else if (pick === 'Merge All Passed') await vscode.commands.executeCommand('verdict.mergeAllPassed', { runId: summary.runId });
  else if (pick === 'Open Dashboard') await vscode.commands.executeCommand('verdict.openDashboard');
}

/**
 * Sends one command to a live run's control channel (core/live/control.ts) and waits for its acknowledgment in
 * state.json: works for every run under VERDICT_HOME, whoever started it (this window, another, the CLI). Resolves
 * with the acknowledgment (a refusal is shown), or undefined when the run is not live or did not acknowledge in time.
 */
async function control(ctx: CommandContext, info: RunInfo, verb: ControlVerb, task?: string): Promise<ControlAck | undefined> {
  const what = `${verb}${task ? ` ${task}` : ''}`;
  if (info.liveness !== 'running') return refuse(`run ${info.state.runId} is not live (${info.liveness}); ${what} acts on a running run`);
  if (task !== undefined && !info.state.tasks.some((t) => t.key === task)) return refuse(`run ${info.state.runId} has no task ${task}`);
  const { command, ack } = await sendControlAndWait(info.stateFile, { verb, ...(task !== undefined ? { task } : {}), by: editorIdentity() });
  if (!ack) {
    ctx.log.warn(`${what}: sent to run ${info.state.runId} (command ${command.id}), not acknowledged yet; see control in ${info.stateFile}`);
    void vscode.window.showWarningMessage(`Verdict: ${what} sent to run ${info.state.runId}; not acknowledged yet`);
    return undefined;
  }
  ctx.log.info(`${what}: ${ack.result}${ack.reason ? ` — ${ack.reason}` : ''} (run ${info.state.runId}, acknowledged after ${ack.ackAt - command.at} ms)`);
  if (ack.result === 'refused') return refuse(`${what} refused by run ${info.state.runId}: ${ack.reason}`);
  ctx.tree.refresh();
  return ack;
}

/** The run a reference names, read fresh (a run of any process); without a reference, the first live run. */
function runOf(ctx: CommandContext, runId: string | undefined): RunInfo | undefined {
  ctx.tree.refresh();
  return runId ? ctx.tree.runs().find((r) => r.state.runId === runId) : ctx.tree.runs().find((r) => r.liveness === 'running');
}

/** Cancel Run: a `cancel` through the run's control channel, acknowledged once the run has ended. */
async function cancelRun(ctx: CommandContext, ref?: RunRef): Promise<ControlAck | undefined> {
  const info = runOf(ctx, ref?.runId);
  if (!info) return refuse(ref?.runId ? `no run ${ref.runId}` : 'no live run to cancel');
  return control(ctx, info, 'cancel');
}

/** Pause Run / Drain Run: `pause` (no new attempt until resumed) or `drain` (finish what runs, then end). */
async function pauseOrDrain(ctx: CommandContext, verb: 'pause' | 'drain', ref?: RunRef): Promise<ControlAck | undefined> {
  const info = runOf(ctx, ref?.runId);
  if (!info) return refuse(ref?.runId ? `no run ${ref.runId}` : `no live run to ${verb}`);
  return control(ctx, info, verb);
}

/**
 * Resume Run: a paused live run goes on (`resume` through its control channel); a run that ended or whose
 * orchestrator died is taken over by a detached orchestrator (`verdict resume RUN`): the same run runs its tasks that
 * did not pass again.
 */
async function resumeRun(ctx: CommandContext, ref?: RunRef): Promise<ControlAck | RunInfo | undefined> {
  return guarded(ctx, async () => {
    ctx.tree.refresh();
    const info = ref?.runId
      ? ctx.tree.runs().find((r) => r.state.runId === ref.runId)
      : ctx.tree.runs().find((r) => r.liveness === 'running' && r.state.paused);
    if (!info) return refuse(ref?.runId ? `no run ${ref.runId}` : 'no paused run to resume');
    if (info.liveness === 'running') return control(ctx, info, 'resume');
    const resumed = await ctx.launcher.resume(info.state.runId, info.state.manifestFile);
    void vscode.window.showInformationMessage(
      `Verdict: run ${info.state.runId} resumed (${resumed.state.resumes?.at(-1)?.tasks.join(', ') ?? 'its tasks that did not pass'})`,
    );
    ctx.tree.refresh();
    return resumed;
  });
}

/** Stop Task: a `stop` through the run's control channel (the task ends CANCELLED and is not retried). */
async function stopTask(ctx: CommandContext, ref?: TaskRef): Promise<ControlAck | undefined> {
  const info = ref && runOf(ctx, ref.runId);
  if (!ref?.key || !info) return refuse('pick a task of a live run in the Verdict runs view');
  return control(ctx, info, 'stop', ref.key);
}

/**
 * Rerun Task: in a live run, a `rerun` through its control channel (new attempts in the same run); for a run that
 * ended, a detached `verdict rerun RUN TASK`: the same run runs that task (and its BLOCKED dependents) again.
 */
async function rerunTask(ctx: CommandContext, ref?: TaskRef): Promise<ControlAck | RunInfo | undefined> {
  return guarded(ctx, async () => {
    requireTrust('rerun a task');
    const found = taskOf(ctx, ref);
    if (!found || !ref) return refuse('pick a task in the Verdict runs view');
    if (found.info.liveness === 'running') return control(ctx, found.info, 'rerun', ref.key);
    const info = await ctx.launcher.resume(ref.runId, found.info.state.manifestFile, ref.key);
    ctx.tree.refresh();
    return info;
  });
}

/** Review Task: the task's changes, base_ref against its committed work, in the multi-file diff editor. */
async function reviewTask(ctx: CommandContext, ref?: TaskRef): Promise<number | undefined> {
  const found = taskOf(ctx, ref);
  if (!found || !ref) return refuse('pick a task in the Verdict runs view');
  return showChanges(found.info, found.task);
}

/**
 * Opens a task's changes (base_ref against its committed work) in the active editor group: one file in the diff
 * editor, several in the multi-file diff editor. Returns how many files, or undefined (with a message) when there is
 * no committed work or no change.
 */
async function showChanges(info: RunInfo, task: TaskState): Promise<number | undefined> {
  const { repo, baseSha } = info.state;
  const head = task.commit;
  if (!repo || !baseSha || !head) return refuse(`${task.key} has no committed work to review (only passed worktree-mode tasks do)`);
  const files = await changedFiles(repo, baseSha, head);
  if (!files.length) return refuse(`${task.key} changed no files`);
  const resources = files.map((f) => {
    const [left, right] = diffArguments({ repo, base: baseSha, head, path: f.path, key: task.key });
    return [vscode.Uri.file(path.join(repo, f.path)), left, right];
  });
  if (files.length === 1)
    await vscode.commands.executeCommand('vscode.diff', ...diffArguments({ repo, base: baseSha, head, path: files[0]?.path ?? '', key: task.key }));
  // VS Code adds the count: "<key>: changes (2 files)".
  else await vscode.commands.executeCommand('vscode.changes', `${task.key}: changes`, resources);
  return files.length;
}

/**
 * Compare with Winner: a best-of-N candidate's changes beside its task's winner's — the winner's in the first editor
 * group, the candidate's in the second (created when missing), each base_ref against its committed work. Refused
 * for a task that is not a candidate, a candidate of a task with no winner (yet), the winner itself, and a candidate
 * without committed work (only one that passed has any). Resolves with the winner's key and both files counts.
 */
async function compareWithWinner(ctx: CommandContext, ref?: TaskRef): Promise<{ winner: string; winnerFiles: number; candidateFiles: number } | undefined> {
  const found = taskOf(ctx, ref);
  if (!found || !ref) return refuse('pick a candidate of a best-of-N task in the Verdict runs view');
  const { task, info } = found;
  if (task.candidate === undefined || !task.group) return refuse(`${ref.key} is not a best-of-N candidate`);
  const entry = info.state.tasks.find((t) => t.key === task.group);
  const winner = entry?.winner ? info.state.tasks.find((t) => t.key === entry.winner) : undefined;
  if (!winner) return refuse(`${task.group} has no winner${entry ? ` (it is ${entry.status})` : ''}: there is nothing to compare ${ref.key} with`);
  if (winner.key === task.key) return refuse(`${ref.key} is the winner of ${task.group}; pick another candidate to compare with it`);
  if (!task.commit) return refuse(`${ref.key} has no committed work to compare (it is ${task.status}; only a candidate that passed has)`);
  await vscode.commands.executeCommand('workbench.action.focusFirstEditorGroup');
  const winnerFiles = await showChanges(info, winner);
  if (winnerFiles === undefined) return undefined;
  // The second group (VS Code creates it to the right when there is only one): the candidate beside the winner.
  await vscode.commands.executeCommand('workbench.action.focusSecondEditorGroup');
  const candidateFiles = await showChanges(info, task);
  if (candidateFiles === undefined) return undefined;
  return { winner: winner.key, winnerFiles, candidateFiles };
}

/** Merge Task / Merge All Passed: the merge queue, one task at a time, outcomes in a message and the log. */
async function merge(ctx: CommandContext, runId: string | undefined, keys?: string[]): Promise<MergeOutcome[] | undefined> {
  return guarded(ctx, async () => {
    requireTrust('merge task branches');
    ctx.tree.refresh();
    const info = ctx.tree.runs().find((r) => r.state.runId === runId);
    if (!info) return refuse('pick a run or a task in the Verdict runs view');
    const home = resolveHome(readSettings().home);
    const requests = mergeRequestsForRun(home, info.state, keys);
    const landed = keys
      ?.map((k) => info.state.tasks.find((t) => t.key === k))
      .map((t) => (t ? landedReason(t) : null))
      .find((r) => r !== null);
    if (!requests.length && landed && keys?.length === 1) return refuse(`${keys[0]}: ${landed}`);
    if (!requests.length) return refuse(`nothing to merge: ${keys ? keys.join(', ') : 'no task'} of run ${info.state.runId} passed with committed work`);
    // The branch merged into, for the message (a dirty tree makes mergeQueue throw its own explanation).
    const target = requests[0] ? await mergeTarget(requests[0].repo).catch(() => null) : null;
    // What earlier merges of this run delivered: a merge now must not undo it (docs/workflows.md).
    const before = deliveredBefore(home, info.state);
    const outcomes = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Verdict: merging into ${target ?? 'the current branch'}` },
      (progress) =>
        mergeQueue(
          requests,
          (o) => {
            ctx.log.info(`merge ${o.key}: ${o.status}${'reason' in o ? ` — ${o.reason}` : ''}`);
            progress.report({ message: `${o.key} (${requests.find((r) => r.key === o.key)?.branch ?? 'no branch'}): ${o.status}` });
          },
          { merged: before },
        ),
    );
    // Merged is recorded on the task (state.json `merged`): every view shows it, and merging it again changes nothing.
    for (const o of outcomes) {
      if (o.status !== 'MERGED' || !target) continue;
      const why = await recordLanding(info.stateFile, o.key, { merged: { commit: o.sha, into: target, at: Date.now(), paths: o.paths } });
      if (why) ctx.log.warn(`merge ${o.key}: ${why}`);
    }
    ctx.tree.refresh();
    const text = `Verdict: ${mergeNotice(outcomes, new Map(requests.map((r) => [r.key, r.branch])), target)}`;
    if (outcomes.some((o) => o.status !== 'MERGED')) void vscode.window.showWarningMessage(text);
    else void vscode.window.showInformationMessage(text);
    return outcomes;
  });
}

/**
 * Discard Task: removes the task's worktree and deletes its branch, after a modal confirmation (the branch may hold
 * committed work). `{ confirmed: true }` as second argument skips the question (for the API and tests).
 */
async function discardTask(ctx: CommandContext, ref?: TaskRef, opts?: { confirmed?: boolean }): Promise<boolean> {
  const result = await guarded(ctx, async () => {
    requireTrust('discard a task');
    const found = taskOf(ctx, ref);
    if (!found || !ref) return refuse<boolean>('pick a task in the Verdict runs view');
    const { repo } = found.info.state;
    const branch = found.task.branch;
    if (!repo || !branch) return refuse<boolean>(`${ref.key} has no worktree or branch (plain mode); its folder is ${found.task.dir}`);
    if (!opts?.confirmed) {
      const answer = await vscode.window.showWarningMessage(
        `Discard ${ref.key}? This removes its worktree and deletes branch ${branch}${found.task.commit ? ', which holds committed work' : ''}.`,
        { modal: true },
        'Discard',
      );
      if (answer !== 'Discard') return false;
    }
    // As `verdict discard` does (the workspace is trusted: requireTrust above): under the repository's worktree lock, a
    // tree a live process works in kept, an overlay unmounted.
    const { sha } = await discardTaskWorktree(repo, found.task.dir, branch);
    const commit = sha ?? found.task.discarded?.commit ?? null;
    const why = await recordLanding(found.info.stateFile, ref.key, { discarded: { commit, at: Date.now() } });
    if (why) ctx.log.warn(`discard ${ref.key}: ${why}`);
    ctx.log.info(
      `discarded ${ref.key}: worktree ${found.task.dir} and branch ${branch}${commit ? ` (it held ${commit}; recover with: git branch ${branch} ${commit})` : ''}`,
    );
    if (commit) void vscode.window.showInformationMessage(`Verdict: discarded ${ref.key}; recover its branch with: git branch ${branch} ${commit}`);
    ctx.tree.refresh();
    return true;
  });
  return result === true;
}

/** Open Log: an attempt's prompt, worker log or check log. */
async function openLog(ctx: CommandContext, ref?: TaskRef & { attempt?: number; log?: LogKind; file?: string }): Promise<void> {
  if (!ref) return void refuse('pick an attempt log in the Verdict runs view');
  const found = taskOf(ctx, ref);
  const attempt = ref.attempt ?? found?.task.attempts.length ?? 1;
  const file = ref.file ?? ctx.tree.logFile(ref, attempt, ref.log ?? 'worker');
  if (!fs.existsSync(file)) return void refuse(`${file} does not exist (yet)`);
  await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
}

/**
 * Follow Task Log: the task's worker output as it arrives, in a read-only document that follows the latest attempt's
 * worker.log (its last 64 KiB; vscode/task-log.ts). Resolves with the editor, or undefined when no task was named.
 */
async function followTaskLog(ctx: CommandContext, ref?: TaskRef): Promise<vscode.TextEditor | undefined> {
  const found = taskOf(ctx, ref);
  if (!ref || !found) return void refuse('pick a task in the Verdict runs view');
  return ctx.taskLogs.open(ref.runId, ref.key);
}

/** Lint Manifest: lints now and opens the Problems panel. */
async function lintManifestCommand(ctx: CommandContext, target?: unknown): Promise<void> {
  const uri = target instanceof vscode.Uri ? target : await pickManifest();
  if (!uri) return;
  const findings = await ctx.diagnostics.lintNow(await vscode.workspace.openTextDocument(uri));
  void vscode.commands.executeCommand('workbench.actions.view.problems');
  ctx.log.info(`${vscode.workspace.asRelativePath(uri)}: ${findings.length} finding(s)`);
}

/** Treat as a Verdict Manifest: lists the file in `verdict.manifestFiles`, then lints it; resolves with its findings. */
async function treatAsManifestCommand(ctx: CommandContext, target?: unknown): Promise<Finding[] | undefined> {
  const glob = await treatAsManifest(target);
  if (!glob) return undefined;
  const uri = target instanceof vscode.Uri ? target : vscode.window.activeTextEditor?.document.uri;
  if (!uri) return undefined;
  ctx.log.info(`${glob} added to verdict.manifestFiles: linted as a Verdict manifest from now on`);
  return ctx.diagnostics.lintNow(await vscode.workspace.openTextDocument(uri));
}

/** The command table: every command of package.json's contributes.commands (but the dashboard's), in one loop. */
export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  logChannel = ctx.log;
  const table: Record<string, (...args: never[]) => unknown> = {
    'verdict.runManifest': (uri?: unknown, options?: RunManifestOptions) => runManifestCommand(ctx, uri, options),
    'verdict.cancelRun': (ref?: RunRef) => cancelRun(ctx, ref),
    'verdict.pauseRun': (ref?: RunRef) => pauseOrDrain(ctx, 'pause', ref),
    'verdict.drainRun': (ref?: RunRef) => pauseOrDrain(ctx, 'drain', ref),
    'verdict.resumeRun': (ref?: RunRef) => resumeRun(ctx, ref),
    'verdict.stopTask': (ref?: TaskRef) => stopTask(ctx, ref),
    'verdict.rerunTask': (ref?: TaskRef) => rerunTask(ctx, ref),
    'verdict.reviewTask': (ref?: TaskRef) => reviewTask(ctx, ref),
    'verdict.compareWithWinner': (ref?: TaskRef) => compareWithWinner(ctx, ref),
    'verdict.mergeTask': (ref?: TaskRef) => merge(ctx, ref?.runId, ref?.key ? [ref.key] : undefined),
    'verdict.mergeAllPassed': (ref?: RunRef) => merge(ctx, ref?.runId),
    'verdict.discardTask': (ref?: TaskRef, opts?: { confirmed?: boolean }) => discardTask(ctx, ref, opts),
    'verdict.openLog': (ref?: TaskRef & { attempt?: number; log?: LogKind; file?: string }) => openLog(ctx, ref),
    'verdict.followTaskLog': (ref?: TaskRef) => followTaskLog(ctx, ref),
    'verdict.lintManifest': (uri?: unknown) => lintManifestCommand(ctx, uri),
    'verdict.refreshRuns': () => ctx.tree.refresh(),
    'verdict.treatAsManifest': (uri?: unknown) => treatAsManifestCommand(ctx, uri),
    'verdict.doctor': (opts?: { probe?: boolean; show?: boolean }) => runDoctor(ctx.launcher.cli, ctx.log, opts),
    // The templates ship beside dist/ (…/dist/cli.js → …/templates).
    'verdict.newManifest': (target?: unknown, args?: NewManifestArgs) =>
      guarded(ctx, () => newManifest(path.join(path.dirname(path.dirname(ctx.launcher.cli)), 'templates'), ctx.log, target, args)),
  };
  return Object.entries(table).map(([id, fn]) => vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown));
}
