/**
 * Workflow `critique` (docs/workflows.md "Critique loop"; its section: section.ts, rule.ts): after a passed check (and review), critics read the
 * proposal (step.ts: step `critique`, placed after `review`); their verified criticisms are handed to the next attempt
 * as a revision that spends no retry (onAttemptEnd, prompt), until the loop stops. Its files: the loop (loop.ts), the
 * critic's answer (verdict.ts), a command criticism's rules (command.ts), the critic's prompt (prompt.ts), its record
 * and eval row (record.ts), the loop kept for resume (state.ts), the pool's round on the orchestrator (pool-step.ts), and a revision's part of a pool payload (pool-part.ts).
 */
import type { Workflow } from '../workflow';
import { revisionPrompt } from './loop';
import { critiqueOf, critiqueRow, reportColumn } from './record';
import { critiqueStep, isRevision, pendingCritique, restoreCritique, settleCritique } from './step';
import { critiqueHereStep } from './pool-step';
import { critiquePoolPart } from './pool-part';
import { critiqueSection } from './section';

export const critiqueWorkflow: Workflow = {
  name: 'critique',
  section: critiqueSection,
  steps: [{ step: critiqueStep, after: 'review' }],
  poolSteps: [critiqueHereStep()],
  onAttemptEnd: (_ctx, task, rec, how) => settleCritique(task, rec, how),
  prompt: (task, failure) => (isRevision(task) ? revisionPrompt(task.spec.spec, failure) : null),
  failureNote: pendingCritique,
  rowColumns: reportColumn,
  rows: (rec) => (critiqueOf(rec).critiques ?? []).map((c) => critiqueRow(rec, c)),
  receipt: (rec) => {
    const { critiques } = critiqueOf(rec);
    return critiques ? { critiques } : {};
  },
  onResume: restoreCritique,
  pool: critiquePoolPart,
  // Critics read sealed commits on the orchestrator, even on a pool run (pool-step.ts).
  readerEngines: (spec) => (spec.critique?.critics ?? []).map((c) => ({ engine: c.engine, here: true })),
};

export { isRevision, markRevision, revisionPending } from './step';
