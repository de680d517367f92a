/**
 * A consensus group's decision (docs/workflows.md "Consensus"), pure: the passing candidates' behaviour on each input
 * (what their probe printed on stdout and how it exited, distinguish.ts) groups them; the largest group wins, and in it
 * the cheapest member (every member's cost known), else the first to pass. Groups tied for largest go first to the one
 * whose behaviour the other candidates share on the most single inputs (agreementOf); those still tied go to the `rank`
 * reviewers when the task has them, else to the group with the cheapest member (else the one whose member passed
 * first); the tie is said. When the behaviour cannot tell anything (no input, or the probe never exited 0), consensus
 * could not decide and the first to pass wins, saying why — never a silent pick.
 */
import type { ConsensusColumn } from '../../../store/eval-row';

/** A passing candidate as the decision sees it. */
export interface ConsensusMember {
  key: string;
  candidate: number;
  engine: string;
  model: string | null;
  /** What its attempts cost, micro-USD; null when any attempt's cost is unknown. */
  costMicroUsd: number | null;
  /** When its PASS attempt ended, ms since the epoch (the first to pass ended first). */
  passedAt: number;
}

/** What a probe did on one input: its exit code (null: killed or never started), and its stdout's digest and start. */
export interface Behaviour {
  exitCode: number | null;
  timedOut: boolean;
  /** sha256 of everything it printed on stdout (hex). */
  digest: string;
  /** The start of what it printed, for the records (≤ 200 characters). */
  preview: string;
}

/**
 * The decision. `won`: `winner` (a member's key) wins; `rank`: groups tied for largest and the task has `rank`
 * reviewers: they choose among `tied` (one member per tied group, that group's own pick); `column` says the decision
 * so far either way (its `decided` is `tie-ranked` for `rank`, final once the ranking has chosen).
 */
export type ConsensusDecision = { kind: 'won'; winner: string; column: ConsensusColumn } | { kind: 'rank'; tied: ConsensusMember[]; column: ConsensusColumn };

/** The longest text kept of an input that split the candidates, characters. */
export const SPLIT_TEXT_CHARS = 200;

/** A behaviour as one comparable word: how it exited (or `timeout`) and the digest of its stdout. */
export function behaviourWord(b: Behaviour): string {
  return `${b.timedOut ? 'timeout' : b.exitCode === null ? 'killed' : `exit ${b.exitCode}`}:${b.digest}`;
}

/** The first to pass among `members` (ended first; equal times, the lowest number). */
export function firstToPass(members: readonly ConsensusMember[]): ConsensusMember {
  return [...members].sort((a, b) => a.passedAt - b.passedAt || a.candidate - b.candidate)[0] as ConsensusMember;
}

/** The pick of one group: its cheapest member when every member's cost is known (equal costs: the first to pass), else the first to pass. */
export function pickOf(members: readonly ConsensusMember[]): { member: ConsensusMember; by: 'cheapest' | 'first to pass' } {
  if (members.every((m) => m.costMicroUsd !== null)) {
    const cheapest = Math.min(...members.map((m) => m.costMicroUsd as number));
    const at = members.filter((m) => m.costMicroUsd === cheapest);
    return { member: firstToPass(at), by: at.length === members.length && members.length > 1 ? 'first to pass' : 'cheapest' };
  }
  return { member: firstToPass(members), by: 'first to pass' };
}

const memberColumn = (m: ConsensusMember) => ({ key: m.key, candidate: m.candidate, engine: m.engine, model: m.model });
const names = (ms: readonly ConsensusMember[]) => ms.map((m) => `candidate ${m.candidate}`).join(', ');

/**
 * Decides a consensus group. `members`: the passing candidates (two or more); `inputs`: the inputs used (their text);
 * `given`: how many the inputs command made; `behaviours`: by member key, one Behaviour per input, in input order;
 * `undecidable`: why consensus cannot decide before any behaviour is compared (the inputs command failed or made
 * none), or null; `hasRank`: the task has `rank` reviewers to break a tie.
 */
export function decideConsensus(
  members: readonly ConsensusMember[],
  inputs: readonly string[],
  given: number,
  behaviours: ReadonlyMap<string, readonly Behaviour[]>,
  undecidable: string | null,
  hasRank: boolean,
): ConsensusDecision {
  const base = { inputs: inputs.length, given, tie: null as string | null };
  const fallback = (why: string): ConsensusDecision => {
    const first = firstToPass(members);
    return {
      kind: 'won',
      winner: first.key,
      column: {
        ...base,
        groups: members.length ? [{ members: members.map(memberColumn), size: members.length }] : [],
        splitting: [],
        decided: 'undecided',
        why: `consensus could not decide: ${why}; falling back to the first to pass (candidate ${first.candidate})`,
      },
    };
  };
  if (undecidable !== null) return fallback(undecidable);
  if (!inputs.length) return fallback('there were no inputs');
  const missing = members.find((m) => (behaviours.get(m.key)?.length ?? 0) !== inputs.length);
  if (missing) return fallback(`candidate ${missing.candidate} has no behaviour on every input`);
  if (members.every((m) => (behaviours.get(m.key) as readonly Behaviour[]).every((b) => b.exitCode !== 0)))
    return fallback(`the probe never exited 0 on any input of any candidate (${inputs.length} input(s))`);
  // Group by the whole behaviour vector; groups in order of size, then of their first member's number.
  const byVector = new Map<string, ConsensusMember[]>();
  for (const m of [...members].sort((a, b) => a.candidate - b.candidate)) {
    const vector = (behaviours.get(m.key) as readonly Behaviour[]).map(behaviourWord).join('\n');
    byVector.set(vector, [...(byVector.get(vector) ?? []), m]);
  }
  const groups = [...byVector.values()].sort((a, b) => b.length - a.length || (a[0] as ConsensusMember).candidate - (b[0] as ConsensusMember).candidate);
  const splitting = inputs.flatMap((text, i) =>
    new Set(members.map((m) => behaviourWord((behaviours.get(m.key) as readonly Behaviour[])[i] as Behaviour))).size > 1
      ? [{ input: i, text: text.slice(0, SPLIT_TEXT_CHARS) }]
      : [],
  );
  const column = { ...base, groups: groups.map((g) => ({ members: g.map(memberColumn), size: g.length })), splitting };
  const top = groups.filter((g) => g.length === (groups[0] as ConsensusMember[]).length);
  const splitWords = `${splitting.length} of ${inputs.length} input(s) split them`;
  if (top.length === 1) {
    const pick = pickOf(top[0] as ConsensusMember[]);
    const size = (top[0] as ConsensusMember[]).length;
    const why =
      groups.length === 1
        ? `all ${size} passing candidates behaved alike on ${inputs.length} input(s); the ${pick.by}: candidate ${pick.member.candidate}`
        : `the largest of ${groups.length} groups (${size} of ${members.length}: ${names(top[0] as ConsensusMember[])}) behaved alike; ${splitWords}; the ${pick.by} of it: candidate ${pick.member.candidate}`;
    return { kind: 'won', winner: pick.member.key, column: { ...column, decided: 'largest', why } };
  }
  const tie = `${top.length} groups tied at ${(top[0] as ConsensusMember[]).length} each (${top.map((g) => `{${names(g)}}`).join(' vs ')}); ${splitWords}`;
  return breakTie(top, members, behaviours, { ...column, tie }, hasRank);
}

/**
 * How many (candidate outside `group`, input) pairs behaved as `group` did on that input: the candidates' vote on each
 * input alone, summed. Groups tied on whole behaviour can differ here: the one whose answers most others share input by
 * input is the likelier right (the minimum-Bayes-risk choice over execution results: Shi et al., "Natural Language to
 * Code Translation with Execution", EMNLP 2022, MBR-exec). `behaviours` holds every member on every input.
 */
export function agreementOf(
  group: readonly ConsensusMember[],
  members: readonly ConsensusMember[],
  behaviours: ReadonlyMap<string, readonly Behaviour[]>,
): number {
  const own = (behaviours.get((group[0] as ConsensusMember).key) as readonly Behaviour[]).map(behaviourWord);
  const inside = new Set(group.map((m) => m.key));
  let n = 0;
  for (const m of members) {
    if (inside.has(m.key)) continue;
    (behaviours.get(m.key) as readonly Behaviour[]).forEach((b, i) => (n += behaviourWord(b) === own[i] ? 1 : 0));
  }
  return n;
}

/**
 * Groups tied for largest (`top`, two or more): the one whose behaviour the other candidates share on the most single
 * inputs (agreementOf) wins, its cheapest member else the first to pass (`tie-agreement`); groups still tied go to the
 * `rank` reviewers when the task has some (`tie-ranked`), else to the group with the cheapest member, or, costs unknown,
 * the one whose member passed first (`tie-cheapest`). `column` holds the groups, the splitting inputs and the tie.
 */
function breakTie(
  top: ConsensusMember[][],
  members: readonly ConsensusMember[],
  behaviours: ReadonlyMap<string, readonly Behaviour[]>,
  column: Omit<ConsensusColumn, 'decided' | 'why'> & { tie: string },
  hasRank: boolean,
): ConsensusDecision {
  const scores = top.map((g) => agreementOf(g, members, behaviours));
  const most = Math.max(...scores);
  const lead = top.filter((_, i) => scores[i] === most);
  const votes = `on single inputs the other candidates answered as ${top.map((g, i) => `{${names(g)}} ${scores[i]} time(s)`).join(', ')}`;
  const tie = `${column.tie}; ${votes}`;
  if (lead.length === 1) {
    const pick = pickOf(lead[0] as ConsensusMember[]);
    const why = `${tie}: {${names(lead[0] as ConsensusMember[])}} agrees with the others most; the ${pick.by} of it: candidate ${pick.member.candidate}`;
    return { kind: 'won', winner: pick.member.key, column: { ...column, tie, decided: 'tie-agreement', why } };
  }
  const picks = lead.map((g) => ({ group: g, ...pickOf(g) }));
  if (hasRank)
    return {
      kind: 'rank',
      tied: picks.map((p) => p.member),
      column: { ...column, tie, decided: 'tie-ranked', why: `${tie}: the rank reviewers choose among ${names(picks.map((p) => p.member))}` },
    };
  // The group with the cheapest member (every tied pick's cost known), else the one whose pick passed first.
  const costs = picks.every((p) => p.member.costMicroUsd !== null);
  const best = costs
    ? [...picks].sort(
        (a, b) =>
          (a.member.costMicroUsd as number) - (b.member.costMicroUsd as number) ||
          a.member.passedAt - b.member.passedAt ||
          a.member.candidate - b.member.candidate,
      )[0]
    : picks.find((p) => p.member === firstToPass(picks.map((q) => q.member)));
  const winner = (best as (typeof picks)[number]).member;
  return {
    kind: 'won',
    winner: winner.key,
    column: {
      ...column,
      tie,
      decided: 'tie-cheapest',
      why: `${tie}: the group with ${costs ? 'the cheapest member' : 'the member that passed first (costs unknown)'} wins: candidate ${winner.candidate}`,
    },
  };
}

/** A consensus group already decided by the candidates compared so far (see {@link settledEarly}). */
export interface EarlyLead {
  /** The leading group's member keys, in candidate order. */
  lead: string[];
  /** The next largest group's size (0 when there is none). */
  next: number;
  /** The candidates not yet final. */
  open: number;
}

/**
 * Whether the passing candidates compared so far (`behaviours`: by key, one Behaviour per input, every one over the
 * same inputs) already decide a consensus group whatever the `open` candidates not yet final do: the largest group of
 * alike behaviour has more members than the next largest would have if every open candidate joined it (a > b +
 * open; a group of open candidates alone has at most `open`), so no other group can outnumber it, nor tie with it.
 * Null when it does not, with fewer than two compared, with no input, or when the probe never exited 0 on any input of
 * any candidate (consensus could not decide then: nothing is stopped for it). Pure.
 */
export function settledEarly(behaviours: ReadonlyMap<string, readonly Behaviour[]>, open: number): EarlyLead | null {
  const rows = [...behaviours.entries()];
  if (rows.length < 2 || rows.some(([, b]) => b.length === 0 || b.length !== (rows[0] as [string, readonly Behaviour[]])[1].length)) return null;
  if (rows.every(([, b]) => b.every((x) => x.exitCode !== 0))) return null;
  const byVector = new Map<string, string[]>();
  for (const [key, b] of rows) {
    const vector = b.map(behaviourWord).join('\n');
    byVector.set(vector, [...(byVector.get(vector) ?? []), key]);
  }
  const groups = [...byVector.values()].sort((a, b) => b.length - a.length);
  const lead = groups[0] as string[];
  const next = groups[1]?.length ?? 0;
  return lead.length > next + open ? { lead, next, open } : null;
}
