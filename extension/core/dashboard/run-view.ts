import type { RunInfo, SkippedRun } from '../live/registry';
import type { RunView, SkippedView } from '../../../schemas/protocol';
import path from 'node:path';

/** What a page may see of one run: the registry's RunInfo without local paths and pids. */
export function runView(info: RunInfo): RunView {
  const s = info.state;
  return {
    runId: s.runId,
    runName: s.runName,
    identity: s.identity,
    host: s.host,
    manifestFile: s.manifestFile,
    liveness: info.liveness,
    startedAt: s.startedAt,
    endedAt: s.endedAt,
    heartbeatAt: s.heartbeatAt,
    maxParallel: s.maxParallel,
    worktrees: s.worktrees,
    paused: s.paused === true,
    draining: s.draining === true,
    waits: Object.fromEntries(
      Object.entries(s.waits ?? {})
        .filter(([, w]) => w.until > Date.now())
        .map(([engine, w]) => [
          engine,
          {
            until: w.until,
            reason: w.reason,
            task: w.task,
            attempt: w.attempt,
            ...(w.source !== undefined ? { source: w.source } : {}),
            ...(w.reset !== undefined ? { reset: w.reset } : {}),
            ...(w.why !== undefined ? { why: w.why } : {}),
          },
        ]),
    ),
    counts: info.counts,
    tokens: info.tokens,
    costMicroUsd: info.costMicroUsd,
    ...(s.inputNames ? { inputNames: s.inputNames } : {}),
    ...(s.containment ? { containment: s.containment } : {}),
    ...(s.memoryCap ? { memoryCap: s.memoryCap } : {}),
    ...(s.spend ? { spend: s.spend } : {}),
    tasks: s.tasks.map((t) => ({
      key: t.key,
      engine: t.engine,
      model: t.model,
      taskType: t.taskType,
      verified: t.verified,
      status: t.status,
      branch: t.branch,
      commit: t.commit,
      ...(t.reason !== undefined ? { reason: t.reason } : {}),
      ...(t.merged !== undefined ? { merged: t.merged } : {}),
      ...(t.discarded !== undefined ? { discarded: t.discarded } : {}),
      ...(t.after?.length ? { after: t.after } : {}),
      ...(t.group !== undefined ? { group: t.group } : {}),
      ...(t.candidate !== undefined ? { candidate: t.candidate } : {}),
      // A best-of-N task's decision: how, who won, and a ranked task's scores, tie and disagreement.
      ...(t.select !== undefined ? { select: t.select } : {}),
      ...(t.winner !== undefined ? { winner: t.winner } : {}),
      ...(t.scores !== undefined ? { scores: t.scores } : {}),
      ...(t.tie != null ? { tie: t.tie } : {}),
      ...(t.disagreement != null ? { disagreement: t.disagreement } : {}),
      // A consensus task's groups of alike behaviour and how it was decided.
      ...(t.consensus !== undefined ? { consensus: t.consensus } : {}),
      // A validated, council or phases task's place: lead or member (the page groups by it, never by the key).
      ...(t.workflow !== undefined ? { workflow: t.workflow } : {}),
      attempts: t.attempts.map(({ dir: _dir, workerPid: _pid, workerStartTime: _start, ...a }) => a),
    })),
  };
}

/** A skipped state file as a page sees it: the run folder's name and why. */
export function skippedView(s: SkippedRun): SkippedView {
  return { runId: path.basename(path.dirname(s.stateFile)), reason: s.reason };
}
