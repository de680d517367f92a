/**
 * A run's spend as every view shows it (state.json `spend`, the dashboard's RunView, `verdict runs RUN`, the runs tree),
 * and the one line they all print. Written by the orchestrator (extension/core/run/spend.ts RunSpend.snapshot) as
 * attempts, reviewers and critics are admitted, report usage and end.
 */
export interface RunSpendState {
  /** Settled spend plus what running attempts reported so far, integer micro-USD (an unknown cost counts its reservation). */
  spentMicroUsd: number;
  /** What running attempts hold beyond what they reported (each its worst-case reservation), micro-USD. */
  reservedMicroUsd: number;
  /** The manifest's budget_usd in micro-USD; null without one. */
  budgetMicroUsd: number | null;
  /**
   * Tokens (input plus output) against `budget_tokens`, which counts every engine's tokens (a subscription engine's
   * too): spent and reserved as above, the budget null without one. Absent in runs older than budget_tokens.
   */
  tokens?: { spent: number; reserved: number; budget: number | null };
  /**
   * Spend per envelope (a task's key, a best-of-N group's for its candidates): micro-USD and tokens of its attempts,
   * reviewers, critics and rankers, settled or reported so far by running ones — what a resumed run counts its tasks'
   * envelopes from (after a crash too). Absent in older runs.
   */
  byTask?: Record<string, { usd: number; tokens: number }>;
  /**
   * Engine/model keys (`codex/`, `opencode/acme/m`) whose spend could not be counted: an attempt of them ended with its
   * cost (`usd`) or its tokens (`tokens`) unknown and nothing bounding it. A resumed run refuses them as the run did.
   * Absent when there are none.
   */
  uncounted?: { usd: string[]; tokens: string[] };
}

/** A count of tokens as the views show it: `12,000`. */
function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Micro-USD → "$0.0123" (four decimals under $1, else two). */
function usd(micro: number): string {
  const v = micro / 1e6;
  return `$${v < 1 ? v.toFixed(4) : v.toFixed(2)}`;
}

/**
 * The spend as one line: `spent $0.0012 · reserved $0.0040 · budget $0.0100 (52 %)` (the share is spent plus reserved
 * of the budget, rounded down); without a budget `spent $0.0012 · reserved $0.0040`; a zero reservation is left out.
 * null when there is nothing to show: no spend state (a run older than the field), or no budget and nothing spent or held
 * (a run of scripts, whose cost is unknown: `spent $0.0000` would read as free). With a `budget_tokens`, the tokens
 * follow in the same form: `tokens 12,000 · reserved 3,000 · budget 50,000 tokens (30 %)`.
 */
export function spendLine(s: RunSpendState | undefined | null): string | null {
  if (!s) return null;
  const parts: string[] = [];
  if (!(s.budgetMicroUsd === null && s.spentMicroUsd === 0 && s.reservedMicroUsd === 0)) {
    parts.push(`spent ${usd(s.spentMicroUsd)}`);
    if (s.reservedMicroUsd > 0) parts.push(`reserved ${usd(s.reservedMicroUsd)}`);
    if (s.budgetMicroUsd !== null)
      parts.push(`budget ${usd(s.budgetMicroUsd)} (${Math.floor(((s.spentMicroUsd + s.reservedMicroUsd) / s.budgetMicroUsd) * 100)} %)`);
  }
  const t = s.tokens;
  if (t && t.budget !== null) {
    parts.push(`tokens ${count(t.spent)}`);
    if (t.reserved > 0) parts.push(`reserved ${count(t.reserved)}`);
    parts.push(`budget ${count(t.budget)} tokens (${t.budget > 0 ? Math.floor(((t.spent + t.reserved) / t.budget) * 100) : 100} %)`);
  }
  return parts.length ? parts.join(' · ') : null;
}
