/**
 * A best-of-N group's decision (docs/workflows.md "Best-of-N"; the group and its candidates are ordinary tasks
 * compiled by run/workflows/best-of-n/). Pure: the runner asks it each time a candidate becomes final, exactly as it gates
 * an `after` dependent (decide.ts graphGate), and acts on the answer.
 */
import { statusInfo } from '../../../../../schemas/status';
import type { SelectMode } from '../../../manifest/types';

/** One candidate as the gate sees it: its key, number and current status (in this run, or the run it continues). */
export interface CandidateStatus {
  key: string;
  candidate: number;
  status: string;
}

/**
 * `wait`: no decision yet. `enough`: `stop_after` candidates passed and `stop` (the candidates not final) are to be
 * cancelled; the group is decided once they are final. `won`: the group passes with `winner` (for `first-pass` the
 * runner stops the candidates that are not final). `rank`: every candidate is final and two or more passed (`passed`,
 * by number): the ranking reviewers decide (run/workflows/best-of-n/ranking.ts). `consensus`: the same for a consensus
 * group: their behaviour on its inputs decides (run/workflows/best-of-n/consensus.ts). `lost`: no candidate passed
 * (every one is final); the group ends BLOCKED with `reason`.
 */
export type GroupGate =
  | { kind: 'wait' }
  | { kind: 'enough'; passed: CandidateStatus[]; stop: CandidateStatus[] }
  | { kind: 'won'; winner: CandidateStatus }
  | { kind: 'rank'; passed: CandidateStatus[] }
  | { kind: 'consensus'; passed: CandidateStatus[] }
  | { kind: 'lost'; reason: string };

/**
 * The group's outcome so far. `first-pass`: won as soon as a candidate passed (the lowest-numbered, if several passed
 * already — which only happens when a resumed run finds them passed); `all`: nothing is decided until every candidate
 * is final, then the lowest-numbered one that passed wins; `ranked` and `consensus`: nothing is decided until every
 * candidate is final, then the one that passed wins, or, when several did, they are ranked or compared. Either way,
 * lost when every candidate is final and none passed; the reason lists each candidate's status. `stopAfter` (not with
 * `first-pass`): once that many passed while others are not final, those are to be stopped (`enough`).
 */
export function groupGate(select: SelectMode, candidates: readonly CandidateStatus[], stopAfter?: number): GroupGate {
  const passed = candidates.filter((c) => c.status === 'PASS').sort((a, b) => a.candidate - b.candidate);
  const open = candidates.filter((c) => !statusInfo(c.status).final);
  const allFinal = open.length === 0;
  if (select !== 'first-pass' && stopAfter !== undefined && passed.length >= stopAfter && !allFinal) return { kind: 'enough', passed, stop: open };
  if (select === 'ranked' && allFinal && passed.length > 1) return { kind: 'rank', passed };
  if (select === 'consensus' && allFinal && passed.length > 1) return { kind: 'consensus', passed };
  if (passed[0] && (select === 'first-pass' || allFinal)) return { kind: 'won', winner: passed[0] };
  if (!allFinal) return { kind: 'wait' };
  return { kind: 'lost', reason: `no candidate passed (${candidates.map((c) => `${c.key} ${c.status}`).join(', ')})` };
}

/** The reason a first-pass loser is stopped with (its state, summary and eval row say it). */
export function beatenReason(winner: CandidateStatus): string {
  return `cancelled: candidate ${winner.candidate} (${winner.key}) passed first`;
}

/** The reason a candidate is cancelled with once `stop_after` candidates passed (`passed`, by number). */
export function enoughReason(stopAfter: number, passed: readonly CandidateStatus[]): string {
  return `cancelled: stop_after ${stopAfter} reached (${passed.map((c) => `candidate ${c.candidate}`).join(', ')} passed)`;
}

/**
 * Why a consensus group's remaining candidates are stopped before stop_after is reached: candidates `lead` (their
 * numbers) behaved alike on `inputs` inputs, and the next largest group (`next` members) could not reach them even if
 * the `open` candidates not yet compared (not final, or passed and not probed yet) all joined it.
 */
export function agreedReason(lead: readonly number[], inputs: number, next: number, open: number): string {
  return `consensus reached: ${lead.map((n) => `candidate ${n}`).join(', ')} behave alike on ${inputs} input(s); no other group can outnumber them (the next largest has ${next}, with ${open} candidate(s) not yet compared)`;
}
