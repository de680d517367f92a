import type { Rule, RuleFinding } from './document';

/** `git commit`, `git push` (also `git -C dir commit`). */
const GIT_COMMIT = /\bgit\s+(?:-C\s+\S+\s+)?(?:commit|push)\b/gi;
/** Imperatives: "commit your changes", "commit and push", "push to origin", "commit the work". */
const COMMIT_IMPERATIVE =
  /\b(?:commit|push)(?:\s+(?:and|&)\s+(?:commit|push))?\s+(?:(?:your|the|all|these|this|those|to)\s+[\w/.-]+|it|them|everything|changes|work)\b/gi;
/** A negation earlier in the same sentence: "do not commit", "never push", "without committing". */
const NEGATED = /\b(?:not|never|don't|dont|do not|no need to|without|avoid|must not|shouldn't|should not)\b[^.!?\n]*$/i;

/**
 * worker-commits (warning), worktree mode only: the spec tells the worker to commit or push. The orchestrator
 * commits the worktree onto the task branch after a PASS (steps `seal` and `deliver`: docs/attempt.md "The steps"); a worker's own
 * commit mixes unverified work into the branch history and a push publishes it before any check ran. Matches
 * `git commit`/`git push` and imperatives like "commit your changes" or "push to origin", skipping sentences
 * that say not to. The range is the first match in the spec.
 */
export const workerCommits: Rule = (doc) => {
  if (!doc.worktrees) return [];
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const spec = task.spec;
    if (!spec) continue;
    const match = [...spec.value.matchAll(GIT_COMMIT), ...spec.value.matchAll(COMMIT_IMPERATIVE)]
      .filter((m) => !NEGATED.test(spec.value.slice(0, m.index)))
      .sort((a, b) => (a.index ?? 0) - (b.index ?? 0))[0];
    if (!match) continue;
    const start = match.index ?? 0;
    out.push({
      rule: 'worker-commits',
      severity: 'warning',
      message: `The spec tells the worker to "${match[0]}", but in worktree mode the orchestrator commits the work onto the task branch only after the check passes. Remove the instruction (say "do not commit" if the model tends to).`,
      range: spec.rangeOf(start, start + match[0].length),
      taskKey: task.key,
    });
  }
  return out;
};
