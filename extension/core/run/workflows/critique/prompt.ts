/**
 * A critic's prompt (one argv element, like a worker's spec): the task, what the check proved and printed, the
 * proposal (diff or files, run/review-material.ts), the points the revision was handed (after round 1), and the answer
 * it must give (schemas/critique-answer.schema.json) with what makes a criticism count.
 */
import type { CheckedCriticism } from './criticism';
import { criticismTarget } from './loop';
import { passedCheckLines, workLines, type ReviewPromptInput } from '../../review-prompt';

/** What the critic's prompt says: a reviewer's input (the proposal is its `material`, read-only in `taskDir`) and the round. */
export interface CritiquePromptInput extends ReviewPromptInput {
  round: number;
  /** The verified criticisms the revision being criticised was handed; empty in round 1. */
  previous: readonly CheckedCriticism[];
  /** How long a criticism's command may run, s (the check's limit). */
  commandTimeoutS: number;
}

/** The prompt. Pure; bounded: the spec plus at most the review prompt's material and check bytes, and the previous points. */
export function critiquePrompt(p: CritiquePromptInput): string {
  return [
    `You are criticising a proposal another agent made for the task below, in ${p.taskDir} (read it there as you need; it is read-only to you). Do not change any file: only your answer counts.`,
    '',
    '<task>',
    p.spec,
    '</task>',
    '',
    ...passedCheckLines(p),
    '',
    ...(p.previous.length
      ? [
          `This is round ${p.round}: the proposal is a revision that was handed these points (name again, with a checkable target, any it did not resolve):`,
          ...p.previous.map((c) => `- ${criticismTarget(c)}: ${c.claim}`),
          '',
        ]
      : []),
    ...workLines(p.material, p.materialFile),
    '',
    'Find what is wrong with the proposal: bugs, cases the task asks for that it misses, cheating (a weakened check, hard-coded results, stubs). Every criticism must point at something checkable, or it is dropped and counted against you:',
    '- {"file": "<path relative to the proposal\'s root>", "line": <1-based>, "claim": "…"}: the file must exist in the proposal and have that line;',
    `- {"command": "<shell command>", "claim": "…"}: run with bash -o pipefail -c in the proposal's root (read-only; TMPDIR is writable), at most ${p.commandTimeoutS} s; it must exit non-zero on the proposal as it is (and pass once the problem is fixed). A command that passes is dropped, and so is one that fails on anything: it must name the proposal's file it is about (e.g. \`bash tests/edge.sh\`, \`grep -q parse src/cli.ts\`) or else pass on an empty folder (\`false\`, \`exit 1\`, \`npm test\` alone, \`test -f /missing\` are dropped).`,
    'Answer with one JSON object as your final message and nothing else:',
    '{"criticisms": [ … ]}',
    'At most 20 criticisms, one sentence of claim each; an empty list when you find nothing wrong.',
  ].join('\n');
}
