import { tailBytes } from '../store/eval-row';

/** Bytes of the check output and of the worker log tail injected into a retry prompt. */
export const RETRY_CHECK_BYTES = 8 * 1024;
export const RETRY_WORKER_BYTES = 4 * 1024;

/** What the previous attempt left behind, for the retry. */
export interface FailureContext {
  attempt: number;
  verdict: string;
  check: string;
  checkExitCode: number | null;
  checkOutput: string;
  workerTail: string;
  /** One line, e.g. "the worker ran out of time after 900 s". */
  reason: string;
  /**
   * The check passed but reviewers did not approve: one entry per reviewer that asked for changes or rejected, with
   * its concerns (run/steps/review.ts). Absent or empty: no review section.
   */
  review?: { who: string; verdict: 'changes' | 'reject'; concerns: string[] }[];
  /**
   * The check passed, and passed again on the tree without the implementation (red before green, run/workflows/phases/red-step.ts):
   * `checkExitCode` and `checkOutput` are that run's. Absent: they are the check's.
   */
  redFiles?: string[];
  /**
   * The check passed and the task's full suite failed (run/steps/suite.ts): the suite's command; `checkExitCode` and
   * `checkOutput` are then the suite's. Absent: they are the check's.
   */
  suite?: string;
}

/** Bytes of reviewers' concerns injected into a retry. */
export const RETRY_REVIEW_BYTES = 8 * 1024;

/**
 * The failure text handed to a retry: why the last attempt failed, the check command and the verbatim tail of its
 * output, and the tail of the worker's own log; after a review that did not approve, first the reviewers' concerns.
 * Bounded: at most RETRY_REVIEW_BYTES + RETRY_CHECK_BYTES + RETRY_WORKER_BYTES of output.
 */
export function failureText(f: FailureContext): string {
  const review = (f.review ?? []).flatMap((r) => [
    `${r.who} ${r.verdict === 'reject' ? 'rejected the work as a whole: rethink the approach' : 'asked for these changes'}:`,
    ...r.concerns.map((c) => `- ${c}`),
  ]);
  return [
    `Attempt ${f.attempt} was judged ${f.verdict}: ${f.reason}.`,
    '',
    ...(review.length
      ? [
          'The check passed, but the reviewers did not approve the work. Address every concern below; the check must still pass.',
          cutHead(review.join('\n'), RETRY_REVIEW_BYTES),
          '',
        ]
      : []),
    ...(f.redFiles?.length
      ? [
          `The check passed on your work, then ran again on the same tree without the implementation (${f.redFiles.join(', ')} as they were before it was written) and passed there too, so your tests do not depend on the code they are meant to test. Write tests that exercise it and fail when it is missing or wrong.`,
          '',
        ]
      : []),
    ...(f.suite
      ? [
          `Your work passed the task's check, then the repository's full test suite ran on it and failed: your change breaks something the check does not test. Make the suite pass too; do not weaken or edit its tests.`,
          '',
        ]
      : []),
    `The ${f.suite ? 'suite' : 'check'} command (run with bash -c in your working directory; exit 0 is the only pass):`,
    '```sh',
    f.suite ?? f.check,
    '```',
    `Its exit code${f.redFiles?.length ? ' on the tree without the implementation' : ''} was ${f.checkExitCode ?? 'none (it did not run to completion)'}. The end of its output, verbatim:`,
    '```',
    tailBytes(f.checkOutput, RETRY_CHECK_BYTES).trimEnd() || '(no output)',
    '```',
    'The end of your previous session log:',
    '```',
    tailBytes(f.workerTail, RETRY_WORKER_BYTES).trimEnd() || '(no output)',
    '```',
  ].join('\n');
}

/** The first `maxBytes` bytes of `text` (UTF-8, cut on a character boundary). */
function cutHead(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  return `${buf
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}\n(cut)`;
}

/** The retry prompt: the original spec, then the failure text and a request to fix it in place. */
export function retryPrompt(spec: string, failure: string): string {
  return `${spec}\n\n---\nA previous attempt at this task did not pass. The files it left are still in your working directory.\n${failure}\n\nFix the problem so that the check passes. Do not weaken or edit the check.`;
}
