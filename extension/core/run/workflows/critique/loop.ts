/**
 * The critique loop's state and pure decisions (docs/workflows.md "Critique loop"): a task with `critique` whose
 * attempt passed its check is criticised (run/workflows/critique/step.ts); the criticisms that point at something checkable
 * are handed to a revision (the task's next attempt, like a retry with feedback), which the check judges again and the
 * critics criticise again, until a round limit, a time limit, a revision that changes nothing, or a round with no
 * verified criticism. What is still open then is the report's "unresolved". No I/O.
 */
import { tailBytes } from '../../../store/eval-row';
import type { CheckedCriticism, Criticism } from './criticism';
import { isCommand } from './verdict';

/** One round: the critics' criticisms of one proposal (an attempt that passed its check) and what followed. */
export interface CritiqueRound {
  round: number;
  /** The criticised attempt. */
  attempt: number;
  /** The commit or tree hash criticised (the attempt's `sealed`). */
  sealed: string | null;
  criticisms: CheckedCriticism[];
  /** One line per critic that gave no valid answer (its critique row is ERROR). */
  criticErrors: string[];
  /** `revision asked`, or why the loop stopped after this round. */
  decision: string;
}

/** A task's loop, kept on its runtime across attempts and in critique-loop.json across orchestrators (run/workflows/critique/state.ts). */
export interface CritiqueLoop {
  /** When the first round began, epoch ms; null before it. */
  startedAt: number | null;
  rounds: CritiqueRound[];
  /** Revisions asked so far (≤ `rounds`). */
  revisions: number;
  /** The sealed tree of the last criticised proposal: a revision that seals the same changed nothing. */
  lastSealed: string | null;
  /** The verified criticisms the pending revision was handed. */
  open: CheckedCriticism[];
  /** A revision was asked and its proposal not criticised yet. */
  pending: boolean;
  /** Why the loop ended; null while it goes on. */
  stopped: string | null;
  /** Verified criticisms no revision resolved when the loop ended. */
  unresolved: CheckedCriticism[];
  /** Criticisms dropped so far (they pointed at nothing checkable). */
  dropped: number;
  /** Worktree mode: the commit the first criticised proposal was built on; critics read the work since it. */
  base: string | null;
}

/** A loop before its first round. */
export function newLoop(): CritiqueLoop {
  return { startedAt: null, rounds: [], revisions: 0, lastSealed: null, open: [], pending: false, stopped: null, unresolved: [], dropped: 0, base: null };
}

/** What follows a round: a revision, or the end of the loop (why, and what stays unresolved). */
export type RoundDecision = { kind: 'revise' } | { kind: 'stop'; why: string; unresolved: CheckedCriticism[] };

/**
 * The decision after a round whose verified criticisms are `verified`, in this order: none verified → stop (nothing
 * unresolved); `revisions` already `rounds` → stop at the round limit; `elapsedMs` (since the first round began) at or
 * past `timeLimitMs` → stop at the time limit; else a revision. When it stops with criticisms, they are unresolved.
 */
export function decideRound(o: {
  verified: CheckedCriticism[];
  revisions: number;
  rounds: number;
  elapsedMs: number;
  timeLimitMs: number | null;
}): RoundDecision {
  if (!o.verified.length) return { kind: 'stop', why: 'no verified criticism remains', unresolved: [] };
  if (o.revisions >= o.rounds) return { kind: 'stop', why: `round limit: ${o.rounds} revision(s) done`, unresolved: o.verified };
  if (o.timeLimitMs !== null && o.elapsedMs >= o.timeLimitMs)
    return { kind: 'stop', why: `time limit: ${Math.round(o.timeLimitMs / 1000)} s reached`, unresolved: o.verified };
  return { kind: 'revise' };
}

/**
 * The stop before any critic runs: a pending revision whose proposal sealed exactly the tree it was asked to revise
 * changed nothing, so every criticism it was handed stays unresolved. Null when the loop goes on to a round.
 */
export function noChange(loop: CritiqueLoop, sealed: string | null): Extract<RoundDecision, { kind: 'stop' }> | null {
  if (!loop.pending || sealed === null || sealed !== loop.lastSealed) return null;
  return { kind: 'stop', why: `no change: revision ${loop.revisions} sealed the same tree as the proposal it revised`, unresolved: loop.open };
}

/** How a criticism reads in the revision text and the report: `file:line` or the command in backticks. */
export function criticismTarget(c: Criticism): string {
  return isCommand(c) ? `\`${c.command.replace(/\s+/g, ' ')}\`` : `${c.file}:${c.line}`;
}

/** Bytes of a verified command's output kept as its evidence. */
export const EVIDENCE_BYTES = 2 * 1024;
/** Bytes of the verified criticisms handed to a revision. */
export const REVISION_BYTES = 16 * 1024;

/**
 * The text handed to a revision (VERDICT_FAILURE_FILE, and the prompt of engines that take it there): the round, then
 * each verified criticism with its target, claim and evidence. Bounded by REVISION_BYTES.
 */
export function revisionText(round: number, verified: readonly CheckedCriticism[]): string {
  const lines = verified.flatMap((c) => [`- ${criticismTarget(c)}: ${c.claim}`, ...(c.evidence ? [`  evidence: ${c.evidence.replace(/\n/g, '\n  ')}`] : [])]);
  return [
    `Critique round ${round}: your proposal passed its check, and critics then made the points below; each was checked against it (the file and line exist, or the command fails on it).`,
    '',
    cut(lines.join('\n'), REVISION_BYTES),
    '',
    "Revise the proposal to address every point that is right. The check must still pass, and it still decides: a command made to pass by editing the test it runs, or the check's own files, does not count (protected files are restored).",
  ].join('\n');
}

/** The revision's prompt for engines that take the feedback in the prompt: the spec, then the critique. */
export function revisionPrompt(spec: string, critique: string): string {
  return `${spec}\n\n---\nYour previous proposal for this task passed its check and was then criticised. Its files are still in your working directory.\n${critique}`;
}

/** A verified command's evidence: its exit code on the proposal, why it counts (run/workflows/critique/command.ts), and the tail of what it printed. */
export function commandEvidence(exit: number | string, output: string, why?: string): string {
  const tail = tailBytes(output, EVIDENCE_BYTES).trimEnd();
  return `exited ${exit}${why ? ` (${why})` : ''}${tail ? `: ${tail}` : ' (no output)'}`;
}

/** state.json's view of a loop (TaskState.critique). */
export function loopView(
  loop: CritiqueLoop,
  report: string,
): { report: string; rounds: number; revisions: number; verified: number; dropped: number; unresolved: number; stopped: string | null } {
  return {
    report,
    rounds: loop.rounds.length,
    revisions: loop.revisions,
    verified: loop.rounds.reduce((n, r) => n + r.criticisms.filter((c) => c.verified).length, 0),
    dropped: loop.dropped,
    unresolved: loop.unresolved.length,
    stopped: loop.stopped,
  };
}

/** The report (markdown): every round's criticisms, verified or dropped with why, then the end and what is unresolved. */
export function renderReport(taskKey: string, loop: CritiqueLoop): string {
  const item = (c: CheckedCriticism) =>
    `- critic ${c.critic}, ${criticismTarget(c)}: ${c.claim}\n  ${c.verified ? 'verified' : 'dropped'}: ${c.evidence.replace(/\n/g, '\n  ')}`;
  const out = [`# Critique of ${taskKey}`, ''];
  for (const r of loop.rounds) {
    const verified = r.criticisms.filter((c) => c.verified);
    const dropped = r.criticisms.filter((c) => !c.verified);
    out.push(`## Round ${r.round} (attempt ${r.attempt}, ${r.sealed ? r.sealed.slice(0, 12) : 'no seal'})`, '');
    out.push(
      `${verified.length} verified, ${dropped.length} dropped (pointed at nothing checkable)${r.criticErrors.length ? `, ${r.criticErrors.length} critic(s) gave no valid answer` : ''}. Then: ${r.decision}.`,
      '',
    );
    for (const c of verified) out.push(item(c));
    for (const c of dropped) out.push(item(c));
    for (const e of r.criticErrors) out.push(`- ${e}`);
    out.push('');
  }
  out.push('## End', '', loop.stopped ? `Stopped: ${loop.stopped}.` : 'Still running.', '');
  out.push(loop.unresolved.length ? `Unresolved (${loop.unresolved.length}):` : 'Unresolved: none.');
  for (const c of loop.unresolved) out.push(item(c));
  out.push('', `Dropped in all: ${loop.dropped}. The task's verdict is its check's.`, '');
  return out.join('\n');
}

function cut(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  return buf.length <= maxBytes
    ? text
    : `${buf
        .subarray(0, maxBytes)
        .toString('utf8')
        .replace(/\uFFFD$/, '')}\n(cut)`;
}
