/**
 * The critique workflow's part of a pool attempt's payload (pool/payload.ts `workflows.critique`): present when the
 * attempt is a critique's revision, whose `failure` holds the verified criticisms; the worker then marks it so, and its
 * prompt says so, as a local revision's does. A revision (and a retry while one is pending) starts from the proposal's
 * commit, as it goes on in the same dir locally.
 */
import type { WorkflowPoolPart } from '../workflow';
import { isRevision, markRevision, revisionPending } from './step';

/** The part: `true` for a revision; none for any other attempt. */
export const critiquePoolPart: WorkflowPoolPart = {
  send: (_ctx, task) => (isRevision(task) ? true : null),
  parse: (part, check) => (part === true ? true : check.bad('true (the attempt is a revision)')),
  apply: (task) => markRevision(task),
  startFrom: (task) => (revisionPending(task) && task.state.commit ? [{ key: task.spec.key, commit: task.state.commit }] : null),
};
