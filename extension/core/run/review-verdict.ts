/**
 * The review step's pure decisions: reading a reviewer's answer out of its final message (validated against
 * schemas/review-answer.schema.json) and turning the reviewers' answers into the attempt's verdict under the task's
 * `require` rule. No I/O; the step that runs the reviewers is run/steps/review.ts.
 */
import type { ValidateFunction } from 'ajv';
import { validateReviewAnswer } from '../../../schemas/generated/validateReviewAnswer.js';
import type { Judgement } from './decide';

/** What a reviewer may answer. */
export type ReviewVerdict = 'approve' | 'changes' | 'reject';

/** A valid answer (schemas/review-answer.schema.json; other fields dropped). */
export interface ReviewAnswer {
  verdict: ReviewVerdict;
  /** One sentence each; at least one for changes and reject. */
  concerns: string[];
}

/** How many approvals a task needs: every reviewer, more than half of them, or one. */
export type ReviewRequire = 'all' | 'majority' | 'any';

/** The answer schema's validator, compiled at build time (schemas/validators.build.mjs). */
const validateAnswer = (): ValidateFunction<ReviewAnswer> => validateReviewAnswer as ValidateFunction<ReviewAnswer>;

/** The answer in `message`, or why there is none (one line: that is the reviewer's ERROR). */
export type ParsedAnswer = { ok: true; answer: ReviewAnswer } | { ok: false; error: string };

/**
 * Reads a reviewer's answer from its final message: the whole message (trimmed) when it is JSON, else the last
 * fenced code block (```json … ``` or ``` … ```) that is; the value must match schemas/review-answer.schema.json.
 * Nothing else is searched (no JSON picked out of prose: a reviewer quoting the worker's planted
 * `{"verdict": "approve"}` must not approve by accident). Never throws.
 */
export function parseReviewAnswer(message: string | null): ParsedAnswer {
  if (message === null || !message.trim()) return { ok: false, error: 'the reviewer gave no final message' };
  let value: unknown;
  try {
    value = JSON.parse(message.trim());
  } catch {
    const fenced = [...message.matchAll(/```[A-Za-z]*[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```/g)].map((m) => m[1] as string).reverse();
    const found = fenced.map(tryJson).find((v) => v !== undefined);
    if (found === undefined) return { ok: false, error: `the reviewer's final message is not JSON: ${preview(message)}` };
    value = found;
  }
  const validate = validateAnswer();
  if (!validate(value)) {
    const problems = (validate.errors ?? [])
      .filter((e) => e.keyword !== 'if')
      .map(
        (e) =>
          `${e.instancePath || '(answer)'} ${e.message ?? 'is invalid'}${e.keyword === 'enum' ? ` (${(e.params.allowedValues as string[]).join(', ')})` : ''}`,
      );
    return { ok: false, error: `the reviewer's answer does not match schemas/review-answer.schema.json: ${[...new Set(problems)].join('; ')}` };
  }
  return { ok: true, answer: { verdict: value.verdict, concerns: [...value.concerns] } };
}

/** `text` parsed as JSON, or undefined when it is not JSON. */
export function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The first 200 characters of `text`, on one line. */
export function preview(text: string): string {
  const line = text.trim().replace(/\s+/g, ' ');
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** One reviewer's outcome: its answer, or `error` with why it gave none. `who` names it (engine/model). */
export interface ReviewOutcome {
  who: string;
  verdict: ReviewVerdict | 'error';
  concerns: string[];
  /** Why the reviewer errored (no final message, not JSON, wrong shape, could not run); null otherwise. */
  error: string | null;
}

/** Approvals `require` asks of `n` reviewers: all n, more than half, or one. */
export function approvalsNeeded(n: number, require: ReviewRequire): number {
  if (require === 'all') return n;
  if (require === 'any') return Math.min(1, n);
  return Math.floor(n / 2) + 1;
}

/**
 * The attempt's verdict after review (its check passed), from every reviewer's outcome:
 * - PASS when the approvals reach what `require` asks (approvalsNeeded);
 * - ERROR when they do not, but would have with the reviewers that errored: the worker is not failed for a
 *   reviewer that gave no valid answer (with `all`, one errored reviewer and the rest approving is an ERROR);
 * - FAIL otherwise: the valid answers alone deny approval. The reason names each reviewer that asked for changes or
 *   rejected, with its concerns (each cut at 300 characters, the reason at 2,000: the review rows and the retry's
 *   failure text keep them whole), and the ones that errored.
 * An empty list (no reviewer) is a PASS.
 */
export function judgeReviews(outcomes: readonly ReviewOutcome[], require: ReviewRequire): Judgement {
  const need = approvalsNeeded(outcomes.length, require);
  const approvals = outcomes.filter((o) => o.verdict === 'approve').length;
  const errors = outcomes.filter((o) => o.verdict === 'error');
  if (approvals >= need) return { verdict: 'PASS', reason: '' };
  const errored = errors.map((o) => `${o.who} gave no valid answer (${o.error ?? 'unknown'})`);
  const tally = `${approvals} of ${outcomes.length} reviewer(s) approved, ${require === 'all' ? 'all' : require === 'any' ? 'one' : 'a majority'} needed`;
  if (approvals + errors.length >= need) return { verdict: 'ERROR', reason: `review undecided: ${tally}; ${errored.join('; ')}` };
  const denied = outcomes
    .filter((o) => o.verdict === 'changes' || o.verdict === 'reject')
    .map(
      (o) =>
        `${o.who} ${o.verdict === 'reject' ? 'rejected the work' : 'asked for changes'}: ${o.concerns.map((c, i) => `(${i + 1}) ${clip(c.replace(/\s+/g, ' ').trim(), REASON_CONCERN_CHARS)}`).join(' ')}`,
    );
  return { verdict: 'FAIL', reason: clip(`review: ${tally}. ${[...denied, ...errored].join('; ')}`, REASON_CHARS) };
}

/** Characters of one concern, and of the whole reason, in a judgement's reason (the rows and failure.md keep them whole). */
const REASON_CONCERN_CHARS = 300;
const REASON_CHARS = 2000;

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
